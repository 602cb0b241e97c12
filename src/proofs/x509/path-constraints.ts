import type { GeneralSubtree } from 'pkijs';
import type { Parsed, Role } from './certificate.ts';

/**
 * The RFC 5280 constraints of a path that pkijs 4 does not enforce, or not fully: dNSName and URI
 * name constraints on every name (pkijs accepts one permitted name of a form) down to the anchor's
 * own, and pathLenConstraint (not enforced by pkijs).
 */

/** RFC 5280 §4.2.1.10 dNSName: the name is the constraint or ends with `.constraint`; a leading dot means below it only. */
function dnsWithin(name: string, constraint: string): boolean {
  const n = name.toLowerCase().replace(/\.$/, '');
  const c = constraint.toLowerCase().replace(/\.$/, '');
  if (c === '') return true;
  if (c.startsWith('.')) return n.endsWith(c);
  return n === c || n.endsWith(`.${c}`);
}

/** URI: the constraint applies to the host; `.example.edu` means any host below it, `example.edu` that host only. */
function uriWithin(uri: string, constraint: string): boolean {
  let host: string;
  try {
    host = new URL(uri).hostname.toLowerCase();
  } catch {
    return false;
  }
  if (host === '') return false;
  const c = constraint.toLowerCase();
  return c.startsWith('.') ? host.endsWith(c) : host === c;
}

function subtreesOf(subtrees: readonly GeneralSubtree[], type: 2 | 6): string[] {
  return subtrees.flatMap((subtree) => (subtree.base.type === type ? [String(subtree.base.value)] : []));
}

/**
 * dNSName and URI name constraints, every level down to the anchor's own: each name of a form must
 * lie within the permitted subtrees of that form of every CA above it, and in none of their
 * excluded ones. Self-issued intermediates are exempt, as in RFC 5280 §6.1.3 (b).
 */
export function nameConstraintProblem(path: readonly Parsed[], roles: readonly Role[]): string | undefined {
  for (let i = 0; i < path.length - 1; i++) {
    const subject = path[i]!;
    if (i > 0 && subject.selfIssued) continue;
    const names: Array<{ type: 2 | 6; value: string; within: (name: string, constraint: string) => boolean }> = [
      ...subject.dnsNames.map((value) => ({ type: 2 as const, value, within: dnsWithin })),
      ...subject.uris.map((value) => ({ type: 6 as const, value, within: uriWithin })),
    ];
    for (let j = i + 1; j < path.length; j++) {
      const constraints = path[j]!.nameConstraints;
      if (!constraints) continue;
      for (const name of names) {
        const permitted = subtreesOf(constraints.permitted, name.type);
        if (permitted.length > 0 && !permitted.some((c) => name.within(name.value, c)))
          return `the ${roles[i]} certificate's name ${name.value} is outside the names the ${roles[j]} certificate permits (${permitted.join(', ')})`;
        const excluded = subtreesOf(constraints.excluded, name.type).find((c) => name.within(name.value, c));
        if (excluded !== undefined)
          return `the ${roles[i]} certificate's name ${name.value} is excluded by the ${roles[j]} certificate (${excluded})`;
      }
    }
  }
  return undefined;
}

/** pathLenConstraint (RFC 5280 §4.2.1.9): non-self-issued intermediate CAs below each CA, not counting the leaf. */
export function pathLengthProblem(path: readonly Parsed[], roles: readonly Role[]): string | undefined {
  for (let j = 1; j < path.length; j++) {
    const pathLength = path[j]!.basicConstraints?.pathLength;
    if (pathLength === undefined) continue;
    const below = path.slice(1, j).filter((cert) => !cert.selfIssued).length;
    if (below > pathLength)
      return `the ${roles[j]} certificate allows ${pathLength} intermediate CA(s) below it, the chain has ${below}`;
  }
  return undefined;
}
