import { issueKey } from '../services/api-keys.ts';
import { findApplicationById } from '../store/applications.ts';
import { printJson, requireOption, UsageError, type Command } from './command.ts';
import { generatedKeyJson } from './views.ts';

export const keysCreate: Command = {
  path: ['keys', 'create'],
  summary: "Generate an API key for an application (in the application's environment)",
  usage: 'matricula keys create --app APP_ID --name NAME [--json]',
  options: { app: { type: 'string' }, name: { type: 'string' }, json: { type: 'boolean' } },
  async run(values, _positionals, ctx) {
    const appId = requireOption(values, 'app');
    const name = requireOption(values, 'name');
    const store = await ctx.openStore();
    const app = await findApplicationById(store.db, appId);
    if (!app) throw new UsageError(`no application ${appId}`);
    if (app.status !== 'active') throw new UsageError(`application ${appId} is archived`);
    const key = generatedKeyJson(await issueKey(store.db, { clock: ctx.clock }, app, name));
    if (values.json) printJson(ctx, key);
    else
      ctx.stdout(
        `API key ${key.id} (${key.environment}) for ${key.appId}\n\n  ${key.rawSecret}\n\nThis secret is shown once: store it now.`,
      );
    return 0;
  },
};
