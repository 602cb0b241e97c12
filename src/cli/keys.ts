import { issueKeyAsOperator, revokeKeyAsOperator, type OperatorKeyRefusal } from '../services/api-keys.ts';
import { printJson, requireOption, UsageError, type Command } from './command.ts';
import { generatedKeyJson } from './views.ts';

function refusal(reason: OperatorKeyRefusal, id: string): UsageError {
  const what = {
    no_application: `no application ${id}`,
    archived_application: `application ${id} is archived`,
    no_key: `no API key ${id} (unknown, or revoked already)`,
  };
  return new UsageError(what[reason]);
}

export const keysCreate: Command = {
  path: ['keys', 'create'],
  summary: "Generate an API key for an application (in the application's environment)",
  usage: 'matricula keys create --app APP_ID --name NAME [--json]',
  options: { app: { type: 'string' }, name: { type: 'string' }, json: { type: 'boolean' } },
  async run(values, _positionals, ctx) {
    const appId = requireOption(values, 'app');
    const name = requireOption(values, 'name');
    const store = await ctx.openStore();
    const issued = await issueKeyAsOperator({ db: store.db, clock: ctx.clock }, appId, name);
    if (!issued.ok) throw refusal(issued.reason, appId);
    const key = generatedKeyJson(issued.key);
    if (values.json) printJson(ctx, key);
    else
      ctx.stdout(
        `API key ${key.id} (${key.environment}) for ${key.appId}\n\n  ${key.rawSecret}\n\nThis secret is shown once: store it now.`,
      );
    return 0;
  },
};

export const keysRevoke: Command = {
  path: ['keys', 'revoke'],
  summary: 'Revoke an API key of any organization: the very next request with it is refused',
  usage: 'matricula keys revoke KEY_ID [--json]',
  options: { json: { type: 'boolean' } },
  async run(values, positionals, ctx) {
    const keyId = positionals[0];
    if (!keyId || positionals.length > 1) throw new UsageError('one KEY_ID is required');
    const store = await ctx.openStore();
    const revoked = await revokeKeyAsOperator({ db: store.db, clock: ctx.clock }, keyId);
    if (!revoked.ok) throw refusal(revoked.reason, keyId);
    const out = { id: revoked.key.id, appId: revoked.key.appId, revokedAt: revoked.revokedAt };
    if (values.json) printJson(ctx, out);
    else ctx.stdout(`API key ${out.id} of ${out.appId} revoked at ${out.revokedAt}.`);
    return 0;
  },
};
