import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../config.ts';
import { ApiRequestError } from './api-client.ts';
import { appsList } from './apps.ts';
import { defaultContext, parseCommandArgs, UsageError, type CliContext, type Command } from './command.ts';
import { idpsAdd, idpsList, idpsRefresh, idpsRemove, idpsShow } from './idps.ts';
import { issuersAdd, issuersList, issuersRefresh, issuersRemove, issuersShow } from './issuers.ts';
import { sandboxRevoke } from './sandbox.ts';
import { keysCreate, keysRevoke } from './keys.ts';
import { eventsTail, listen, webhooksTest } from './listen.ts';
import { membersInvite } from './members.ts';
import { orgCreate } from './org.ts';
import { profilesAdd, profilesList, profilesRemove } from './profiles.ts';
import { walletCredential, walletPresent, walletPresentation } from './wallet.ts';

export const COMMANDS: Command[] = [
  orgCreate,
  membersInvite,
  keysCreate,
  keysRevoke,
  appsList,
  issuersAdd,
  issuersList,
  issuersRemove,
  issuersShow,
  issuersRefresh,
  profilesAdd,
  profilesList,
  profilesRemove,
  idpsAdd,
  idpsList,
  idpsShow,
  idpsRemove,
  idpsRefresh,
  sandboxRevoke,
  walletPresent,
  walletPresentation,
  walletCredential,
  listen,
  eventsTail,
  webhooksTest,
];

function overview(commands: Command[]): string {
  const width = Math.max(...commands.map((c) => c.path.join(' ').length));
  return [
    'Usage: matricula <command> [options]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.path.join(' ').padEnd(width)}  ${c.summary}`),
    '',
    'The database is the one named by DATABASE_URL (default sqlite:./data/matricula.sqlite); org create,',
    "issuers and idps can call a server's admin API instead (--admin-url or MATRICULA_ADMIN_URL, MATRICULA_ADMIN_TOKEN);",
    'listen, events tail and webhooks test use the HTTP API (--api-key, --base-url).',
    'Run "matricula <command> --help" for the options of a command.',
  ].join('\n');
}

function commandHelp(command: Command): string {
  return `${command.summary}\n\nUsage: ${command.usage}`;
}

/** Runs the CLI; returns the exit code (0 ok, 1 failure, 2 usage). */
export async function runCli(argv: string[], context?: CliContext & { close?(): Promise<void> }): Promise<number> {
  const ctx = context ?? defaultContext();
  try {
    const command = COMMANDS.find((c) => c.path.every((word, i) => argv[i] === word));
    if (!command) {
      const group = COMMANDS.filter((c) => c.path[0] === argv[0]);
      const wantsHelp = argv.length === 0 || argv.includes('--help') || argv.includes('-h') || argv[0] === 'help';
      if (wantsHelp || group.length > 0) {
        ctx.stdout(overview(group.length > 0 ? group : COMMANDS));
        return wantsHelp ? 0 : 2;
      }
      ctx.stderr(`Unknown command "${argv.join(' ')}".\n\n${overview(COMMANDS)}`);
      return 2;
    }
    const { values, positionals } = parseCommandArgs(command, argv.slice(command.path.length));
    if (values.help) {
      ctx.stdout(commandHelp(command));
      return 0;
    }
    return await command.run(values, positionals, ctx);
  } catch (err) {
    // A command asked for --json answers with JSON even when it fails: one error object on stdout
    // (a script parsing stdout gets something it can read), the sentence on stderr as always.
    const command = COMMANDS.find((c) => c.path.every((word, i) => argv[i] === word));
    if (command && 'json' in command.options && argv.includes('--json')) ctx.stdout(JSON.stringify(jsonError(err)));
    if (err instanceof UsageError) {
      ctx.stderr(`Error: ${err.message}${command ? `\n\nUsage: ${command.usage}` : ''}`);
      return 2;
    }
    if (err instanceof ConfigError) {
      ctx.stderr(err.message);
      return 1;
    }
    ctx.stderr(`Error: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  } finally {
    await ctx.close?.();
  }
}

/**
 * A failure as the one JSON object `--json` prints: `type` says whose fault it is (`usage`: the
 * command line; `service`: the service refused, with its HTTP `status` and error `code`;
 * `configuration`; `error`: anything else, such as an unreachable service).
 */
function jsonError(err: unknown): {
  error: { type: 'usage' | 'service' | 'configuration' | 'error'; message: string; status?: number; code?: string };
} {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof UsageError) return { error: { type: 'usage', message } };
  if (err instanceof ApiRequestError)
    return { error: { type: 'service', message, status: err.status, ...(err.code ? { code: err.code } : {}) } };
  if (err instanceof ConfigError) return { error: { type: 'configuration', message } };
  return { error: { type: 'error', message } };
}

// Run as a program (`node dist/cli/main.js …`, the compiled build); bin/matricula imports runCli instead.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  process.exitCode = await runCli(process.argv.slice(2));
}
