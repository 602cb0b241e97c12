import type { FindIssuerCallback } from 'pkijs';
import { parsedOf, validityProblem, type Parsed, type Role } from './certificate.ts';
import { nameConstraintProblem } from './path-constraints.ts';

/** pkijs's CertificateChainValidationEngine as the validator uses it: its issuer look-up, and its failures in the service's words. */

/** Issuer look-ups one validation may make; a hostile chain of cross-signed certificates cannot loop. */
const MAX_ISSUER_LOOKUPS = 32;

/** pkijs's `findIssuer`, with signatures checked by node:crypto (Ed25519 too), and a bound on look-ups. */
export function nodeFindIssuer(): FindIssuerCallback {
  let lookups = 0;
  return async (certificate, engine) => {
    if (++lookups > MAX_ISSUER_LOOKUPS) return [];
    const subject = parsedOf(certificate);
    if (!subject) return [];
    return [...engine.trustedCerts, ...engine.certs].filter((candidate) => {
      const issuer = parsedOf(candidate);
      if (!issuer || !certificate.issuer.isEqual(candidate.subject)) return false;
      try {
        return subject.node.verify(issuer.publicKey);
      } catch {
        return false;
      }
    });
  };
}

/** What a failed pkijs verification means, in the service's words. */
export function engineProblem(
  result: { resultCode?: number; resultMessage?: string },
  certs: readonly Parsed[],
  roles: readonly Role[],
  now: Date,
): { noPath: boolean; message: string } {
  switch (result.resultCode) {
    case 8:
      for (const [i, cert] of certs.entries()) {
        const invalid = validityProblem(cert, now, roles[i]!);
        if (invalid) return { noPath: false, message: invalid };
      }
      return { noPath: false, message: 'a certificate of the chain is not valid at this time' };
    case 3:
    case 4:
      return { noPath: false, message: "an issuing certificate's key usage does not allow signing certificates" };
    case 7:
    case 14:
      return { noPath: false, message: 'a certificate that issues another in the chain is not a CA' };
    case 41:
    case 42:
      // Said precisely when the chain, as sent, is the path (it is, in the order x5c requires).
      return {
        noPath: false,
        message:
          nameConstraintProblem(certs, roles) ??
          `a certificate of the chain breaks a name constraint (${result.resultMessage})`,
      };
    case 9:
    case 60:
    case 97:
    case -1:
      return { noPath: true, message: 'the chain does not lead to the trust anchor' };
    default:
      return { noPath: false, message: `the chain is not valid: ${result.resultMessage ?? 'unknown reason'}` };
  }
}
