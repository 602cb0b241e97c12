import type { Config } from '../config.ts';
import { BUILT_IN_PROFILES, STUDENT_CREDENTIAL_PROFILE } from '../domain/built-in-profiles.ts';
import type { Clock } from '../domain/clock.ts';
import {
  profileProblem,
  validateProfile,
  type CredentialProfile,
  type ProfileFormat,
} from '../domain/credential-profiles.ts';
import type { Db } from '../store/db.ts';
import { deleteProfile, insertProfile, listProfiles } from '../store/credential-profiles.ts';

/**
 * Where profiles come from (docs/credential-profiles.md): the built-in ones, CREDENTIAL_PROFILES_FILE
 * (which may replace a built-in one by id), and those added through the admin API or the CLI,
 * stored in the database and read on every verification, so that a removal holds at once.
 */

/** The formats this service verifies; a profile of another format is listed but never offered. */
export const VERIFIED_PROFILE_FORMATS: readonly ProfileFormat[] = ['dc+sd-jwt', 'jwt_vc_json'];

export type ProfileSource = 'built_in' | 'file' | 'api';

export interface ListedProfile {
  profile: CredentialProfile;
  source: ProfileSource;
  /** When it was added (api); null for built-in and file profiles. */
  createdAt: string | null;
}

type ProfileConfig = Pick<Config, 'credentialProfiles' | 'openid4vp'>;

const configured = new WeakMap<object, ListedProfile[]>();

/**
 * The built-in and file profiles, in that order. OPENID4VP_ACCEPTED_VCT, kept as an alias, sets
 * the `vct` values of the built-in StudentCredential profile (Matricula's own claim names).
 */
export function configuredProfiles(config: ProfileConfig): ListedProfile[] {
  const known = configured.get(config);
  if (known) return known;
  const fromFile = new Set(config.credentialProfiles.map((p) => p.id));
  const builtIn = BUILT_IN_PROFILES.filter((p) => !fromFile.has(p.id)).map((profile) => ({
    profile:
      profile.id === STUDENT_CREDENTIAL_PROFILE.id ? { ...profile, vct: [...config.openid4vp.acceptedVct] } : profile,
    source: 'built_in' as const,
    createdAt: null,
  }));
  const listed = [
    ...builtIn,
    ...config.credentialProfiles.map((profile) => ({ profile, source: 'file' as const, createdAt: null })),
  ];
  configured.set(config, listed);
  return listed;
}

function verified(profile: CredentialProfile): boolean {
  return VERIFIED_PROFILE_FORMATS.includes(profile.format);
}

/** The configured profiles a presentation may answer with (no database: the development request by value). */
export function configuredAcceptedProfiles(config: ProfileConfig): CredentialProfile[] {
  return configuredProfiles(config)
    .map((listed) => listed.profile)
    .filter(verified);
}

export type ProfileWarning = (message: string) => void;

const warnProcess: ProfileWarning = (message) =>
  process.emitWarning(message, { code: 'MATRICULA_CREDENTIAL_PROFILES' });

/** Every profile and the accepted ones, read from the configuration and the database. */
export interface ProfileCatalog {
  all(): Promise<ListedProfile[]>;
  /** The profiles presentations are checked against and the DCQL query offers. */
  accepted(): Promise<CredentialProfile[]>;
}

export function profileCatalog(db: Db, config: ProfileConfig, warn: ProfileWarning = warnProcess): ProfileCatalog {
  const warned = new Set<string>();
  const all = async (): Promise<ListedProfile[]> => {
    const listed = configuredProfiles(config);
    const taken = new Set(listed.map((l) => l.profile.id));
    const stored: ListedProfile[] = [];
    for (const row of await listProfiles(db)) {
      const checked = validateProfile(row.definition);
      const problem = !checked.ok
        ? profileProblem(checked)
        : checked.profile.id !== row.id || taken.has(row.id)
          ? 'its id is taken by a built-in or file profile'
          : undefined;
      if (problem !== undefined || !checked.ok) {
        const note = `credential profile ${row.id} skipped: ${problem}`;
        if (!warned.has(note)) warn(note);
        warned.add(note);
        continue;
      }
      stored.push({ profile: checked.profile, source: 'api', createdAt: row.createdAt });
    }
    return [...listed, ...stored];
  };
  return {
    all,
    accepted: async () => (await all()).map((listed) => listed.profile).filter(verified),
  };
}

export type AddProfileOutcome =
  { ok: true; listed: ListedProfile } | { ok: false; kind: 'invalid' | 'duplicate'; message: string };

/** Adds a profile (admin API, `matricula profiles add`); presentations of its type verify at once. */
export async function addProfile(
  deps: { db: Db; clock: Clock; config: ProfileConfig },
  input: unknown,
): Promise<AddProfileOutcome> {
  const checked = validateProfile(input);
  if (!checked.ok) return { ok: false, kind: 'invalid', message: profileProblem(checked) };
  const { profile } = checked;
  const duplicate = { ok: false as const, kind: 'duplicate' as const, message: `A profile ${profile.id} exists.` };
  if (configuredProfiles(deps.config).some((listed) => listed.profile.id === profile.id)) return duplicate;
  const createdAt = deps.clock.now().toISOString();
  if (!(await insertProfile(deps.db, profile, createdAt))) return duplicate;
  return { ok: true, listed: { profile, source: 'api', createdAt } };
}

export type RemoveProfileOutcome = { ok: true } | { ok: false; kind: 'not_found' | 'not_removable'; message: string };

/** Removes a stored profile (a stored row the code no longer accepts too); built-in and file profiles are not. */
export async function removeProfile(
  deps: { db: Db; config: ProfileConfig },
  id: string,
): Promise<RemoveProfileOutcome> {
  const listed = configuredProfiles(deps.config).find((l) => l.profile.id === id);
  if (listed)
    return {
      ok: false,
      kind: 'not_removable',
      message: `${id} is a ${listed.source === 'file' ? 'CREDENTIAL_PROFILES_FILE' : 'built-in'} profile: change the configuration`,
    };
  if (!(await deleteProfile(deps.db, id))) return { ok: false, kind: 'not_found', message: `no profile ${id}` };
  return { ok: true };
}
