import { readFileSync } from 'node:fs';
import { validateProfile, type CredentialProfile } from './domain/credential-profiles.ts';

/**
 * CREDENTIAL_PROFILES_FILE (docs/credential-profiles.md): a JSON file holding `{"profiles": [...]}`
 * (or the list itself). Read once at start; a problem is one line naming the profile and the field,
 * which config.ts turns into the start-up error.
 */
export function readProfilesFile(
  path: string,
): { ok: true; profiles: CredentialProfile[] } | { ok: false; problem: string } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return { ok: false, problem: `cannot be read (${path}): ${(err as NodeJS.ErrnoException).code ?? String(err)}` };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { ok: false, problem: `${path} is not JSON: ${(err as Error).message.replace(/\s+/g, ' ')}` };
  }
  const list = Array.isArray(json)
    ? json
    : typeof json === 'object' && json !== null && Array.isArray((json as { profiles?: unknown }).profiles)
      ? (json as { profiles: unknown[] }).profiles
      : undefined;
  if (!list) return { ok: false, problem: `${path} must hold {"profiles": [...]}` };
  const profiles: CredentialProfile[] = [];
  for (const [i, input] of list.entries()) {
    const checked = validateProfile(input);
    if (!checked.ok) return { ok: false, problem: `${path}: profiles[${i}].${checked.field} ${checked.problem}` };
    if (profiles.some((p) => p.id === checked.profile.id))
      return { ok: false, problem: `${path}: profiles[${i}].id ${checked.profile.id} is defined twice` };
    profiles.push(checked.profile);
  }
  return { ok: true, profiles };
}
