import type { Environment } from '../domain/environment.ts';
import { createOrganizationWithOwner } from '../services/members.ts';
import { createOrganization } from '../services/organizations.ts';
import { adminCall, adminTarget, ADMIN_URL_OPTION, ADMIN_USAGE } from './admin-client.ts';
import { printJson, requireOption, UsageError, type CliContext, type Command } from './command.ts';
import { applicationListEntry, generatedKeyJson } from './views.ts';

type CreatedOrganization = Awaited<ReturnType<typeof createInDatabase>>;

async function createInDatabase(ctx: CliContext, name: string, environment: Environment, ownerEmail?: string) {
  const store = await ctx.openStore();
  const deps = { db: store.db, clock: ctx.clock, config: ctx.config() };
  const withOwner = ownerEmail ? await createOrganizationWithOwner(deps, { name, environment, ownerEmail }) : undefined;
  const created = withOwner ?? (await createOrganization(deps, { name, environment }));
  return {
    organization: { id: created.organization.id, name: created.organization.name },
    application: applicationListEntry(created.application),
    apiKey: generatedKeyJson(created.apiKey),
    ownerInvitation: withOwner?.ownerInvitation,
  };
}

export const orgCreate: Command = {
  path: ['org', 'create'],
  summary: 'Create an organization with a first application and a first API key',
  usage: `matricula org create --name NAME [--environment sandbox|live] [--owner-email EMAIL] [--admin-url URL] [--json]\n\nWith --owner-email, also invites the first owner: the command prints the invitation link, where they choose a\npassword and reach the dashboard.\n\n${ADMIN_USAGE}`,
  options: {
    name: { type: 'string' },
    'owner-email': { type: 'string' },
    environment: { type: 'string' },
    json: { type: 'boolean' },
    ...ADMIN_URL_OPTION,
  },
  async run(values, _positionals, ctx) {
    const name = requireOption(values, 'name');
    const environment = (values.environment ?? 'sandbox') as string;
    if (environment !== 'sandbox' && environment !== 'live')
      throw new UsageError('--environment must be sandbox or live');
    const admin = adminTarget(values, ctx);
    const ownerEmail = typeof values['owner-email'] === 'string' ? values['owner-email'] : undefined;
    const result: CreatedOrganization = admin
      ? (
          await adminCall<{ data: CreatedOrganization }>(admin, 'POST', '/admin/v1/organizations', {
            name,
            environment,
            ...(ownerEmail ? { ownerEmail } : {}),
          })
        ).data
      : await createInDatabase(ctx, name, environment as Environment, ownerEmail);
    if (values.json) {
      printJson(ctx, result);
      return 0;
    }
    ctx.stdout(
      [
        `Organization  ${result.organization.id}  ${result.organization.name}`,
        `Application   ${result.application.id}  ${result.application.name} (${result.application.environment})`,
        `API key       ${result.apiKey.id}  ${result.apiKey.name}`,
        '',
        `  ${result.apiKey.rawSecret}`,
        '',
        'This secret is shown once: store it now. Use it as "Authorization: Bearer <secret>".',
        ...(result.ownerInvitation
          ? [
              '',
              `Owner         ${result.ownerInvitation.email}: open this link to choose a password and sign in to the dashboard`,
              `  ${result.ownerInvitation.url}`,
              `  (works once, until ${result.ownerInvitation.expiresAt})`,
            ]
          : []),
      ].join('\n'),
    );
    return 0;
  },
};
