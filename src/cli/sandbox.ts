import {
  SANDBOX_STATUS_WORDS,
  sandboxStatusListUri,
  setSandboxCredentialStatus,
  type SandboxStatusWord,
} from '../services/sandbox-status-lists.ts';
import { requireOption, UsageError, type Command } from './command.ts';

/**
 * `matricula sandbox revoke`: set the status of one index of a sandbox university's status list,
 * to watch a session fail with credential_revoked. The wallet simulator prints the index of the
 * credential it presents (`wallet present --json`).
 */
export const sandboxRevoke: Command = {
  path: ['sandbox', 'revoke'],
  summary: "Revoke (or suspend, or reinstate) a sandbox credential in its university's status list",
  usage: [
    'matricula sandbox revoke --university DOMAIN --index N [--status revoked|suspended|valid]',
    '',
    "Sets index N of the sandbox university's status list (served at BASE_URL/sandbox/status-lists/DOMAIN).",
    'Presentations of credentials with that index then complete with credential_revoked. Indexes 0-15',
    'are always revoked and 16-31 always suspended; `wallet present --revoked` uses those.',
  ].join('\n'),
  options: { university: { type: 'string' }, index: { type: 'string' }, status: { type: 'string' } },
  async run(values, _positionals, ctx) {
    const domain = requireOption(values, 'university');
    const rawIndex = requireOption(values, 'index');
    if (!/^\d+$/.test(rawIndex)) throw new UsageError('--index must be a whole number');
    const status = (values.status as string | undefined) ?? 'revoked';
    if (!(status in SANDBOX_STATUS_WORDS)) throw new UsageError('--status must be revoked, suspended or valid');
    const outcome = await setSandboxCredentialStatus(
      { db: (await ctx.openStore()).db, clock: ctx.clock },
      { domain, idx: Number(rawIndex), status: status as SandboxStatusWord },
    );
    if (!outcome.ok) throw new UsageError(outcome.message);
    ctx.stdout(`${sandboxStatusListUri(ctx.config().baseUrl, domain)} index ${rawIndex}: ${status}`);
    return 0;
  },
};
