import { activeApplicationsOfOrganization } from '../services/applications.ts';
import { printJson, requireOption, UsageError, type Command } from './command.ts';
import { applicationListEntry } from './views.ts';

export const appsList: Command = {
  path: ['apps', 'list'],
  summary: 'List the active applications of an organization',
  usage: 'matricula apps list --org ORG_ID [--json]',
  options: { org: { type: 'string' }, json: { type: 'boolean' } },
  async run(values, _positionals, ctx) {
    const orgId = requireOption(values, 'org');
    const store = await ctx.openStore();
    const found = await activeApplicationsOfOrganization({ db: store.db }, orgId);
    if (!found) throw new UsageError(`no organization ${orgId}`);
    const apps = found.map(applicationListEntry);
    if (values.json) {
      printJson(ctx, { data: apps });
      return 0;
    }
    if (apps.length === 0) ctx.stdout('No active applications.');
    for (const app of apps)
      ctx.stdout(
        `${app.id}  ${app.environment.padEnd(7)}  keys ${app.keyCount}  webhooks ${app.webhookCount}  ${app.name}`,
      );
    return 0;
  },
};
