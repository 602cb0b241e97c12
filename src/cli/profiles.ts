import type { CredentialProfile } from '../domain/credential-profiles.ts';
import { addProfile, profileCatalog, removeProfile, type ProfileSource } from '../services/credential-profiles.ts';
import { adminCall, adminTarget, ADMIN_URL_OPTION, ADMIN_USAGE } from './admin-client.ts';
import { printJson, requireOption, UsageError, type Command } from './command.ts';
import { readJsonFile } from './issuers.ts';

/** A profile as the admin API shows it. */
type Shown = CredentialProfile & { source: ProfileSource; createdAt: string | null };

function accepts(profile: CredentialProfile): string {
  return [...(profile.vct ?? []), ...(profile.types ?? []), ...(profile.schemas ?? [])].join(', ');
}

export const profilesAdd: Command = {
  path: ['profiles', 'add'],
  summary: 'Add a credential profile: what a credential type means (docs/credential-profiles.md)',
  usage:
    'matricula profiles add --file PROFILE.json [--admin-url URL] [--json]\n\n' +
    'The file: {"id", "format" ("dc+sd-jwt"|"jwt_vc_json"), "vct" | "types" / "schemas",\n' +
    ' "claims": {"is_active_student", "university_domain", "academic_level", "valid_until"}, "issuers"}.\n' +
    'A problem is reported with the field it is in.\n\n' +
    ADMIN_USAGE,
  options: { file: { type: 'string' }, json: { type: 'boolean' }, ...ADMIN_URL_OPTION },
  async run(values, _positionals, ctx) {
    const input = readJsonFile(requireOption(values, 'file'));
    const admin = adminTarget(values, ctx);
    let shown: Shown;
    if (admin) shown = (await adminCall<{ data: Shown }>(admin, 'POST', '/admin/v1/credential-profiles', input)).data;
    else {
      const store = await ctx.openStore();
      const added = await addProfile({ db: store.db, clock: ctx.clock, config: ctx.config() }, input);
      if (!added.ok)
        throw new UsageError(added.kind === 'invalid' ? `invalid profile: ${added.message}` : added.message);
      shown = { ...added.listed.profile, source: 'api', createdAt: added.listed.createdAt };
    }
    if (values.json) printJson(ctx, shown);
    else ctx.stdout(`Added ${shown.id}  ${shown.format}  ${accepts(shown)}`);
    return 0;
  },
};

export const profilesList: Command = {
  path: ['profiles', 'list'],
  summary: 'List the credential profiles (built-in, CREDENTIAL_PROFILES_FILE, added)',
  usage: `matricula profiles list [--admin-url URL] [--json]\n\n${ADMIN_USAGE}`,
  options: { json: { type: 'boolean' }, ...ADMIN_URL_OPTION },
  async run(values, _positionals, ctx) {
    const admin = adminTarget(values, ctx);
    const profiles: Shown[] = admin
      ? (await adminCall<{ data: Shown[] }>(admin, 'GET', '/admin/v1/credential-profiles')).data
      : (await profileCatalog((await ctx.openStore()).db, ctx.config(), (m) => ctx.stderr(m)).all()).map((l) => ({
          ...l.profile,
          source: l.source,
          createdAt: l.createdAt,
        }));
    if (values.json) {
      printJson(ctx, { data: profiles });
      return 0;
    }
    for (const p of profiles)
      ctx.stdout(`${p.id.padEnd(28)}  ${p.source.padEnd(8)}  ${p.format.padEnd(11)}  ${accepts(p)}`);
    return 0;
  },
};

export const profilesRemove: Command = {
  path: ['profiles', 'remove'],
  summary: 'Remove a credential profile added with profiles add (its credentials stop verifying at once)',
  usage: `matricula profiles remove PROFILE_ID [--admin-url URL]\n\n${ADMIN_USAGE}`,
  options: { ...ADMIN_URL_OPTION },
  async run(values, positionals, ctx) {
    const id = positionals[0];
    if (!id || positionals.length > 1) throw new UsageError('give exactly one profile id');
    const admin = adminTarget(values, ctx);
    if (admin) await adminCall(admin, 'DELETE', `/admin/v1/credential-profiles/${encodeURIComponent(id)}`);
    else {
      const removed = await removeProfile({ db: (await ctx.openStore()).db, config: ctx.config() }, id);
      if (!removed.ok) throw new UsageError(removed.message);
    }
    ctx.stdout(`Removed ${id}`);
    return 0;
  },
};
