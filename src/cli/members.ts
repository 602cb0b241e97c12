import { isMemberRole } from '../domain/members.ts';
import { operatorInvite } from '../services/members.ts';
import { adminCall, adminTarget, ADMIN_URL_OPTION, ADMIN_USAGE } from './admin-client.ts';
import { printJson, requireOption, UsageError, type Command } from './command.ts';

type Invitation = Awaited<ReturnType<typeof operatorInvite>>;

/** The operator invites a member to an organization's dashboard (docs/dashboard.md). */
export const membersInvite: Command = {
  path: ['members', 'invite'],
  summary: "Invite a member to an organization's dashboard; prints the one-time link",
  usage: `matricula members invite --org ORG_ID --email EMAIL [--role owner|developer|viewer] [--admin-url URL] [--json]\n\n${ADMIN_USAGE}`,
  options: {
    org: { type: 'string' },
    email: { type: 'string' },
    role: { type: 'string' },
    json: { type: 'boolean' },
    ...ADMIN_URL_OPTION,
  },
  async run(values, _positionals, ctx) {
    const orgId = requireOption(values, 'org');
    const email = requireOption(values, 'email');
    const role = typeof values.role === 'string' ? values.role : 'developer';
    if (!isMemberRole(role)) throw new UsageError('--role must be owner, developer or viewer');
    const admin = adminTarget(values, ctx);
    const invitation: Invitation = admin
      ? (
          await adminCall<{ data: Invitation }>(
            admin,
            'POST',
            `/admin/v1/organizations/${encodeURIComponent(orgId)}/invitations`,
            { email, role },
          )
        ).data
      : await (async () => {
          const store = await ctx.openStore();
          return operatorInvite({ db: store.db, clock: ctx.clock, config: ctx.config() }, { orgId, email, role });
        })();
    if (values.json) printJson(ctx, invitation);
    else
      ctx.stdout(
        `Invitation of ${invitation.email} as ${invitation.role}: send them this link (works once, until ${invitation.expiresAt})\n\n  ${invitation.url}`,
      );
    return 0;
  },
};
