import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

/**
 * The service's command line (`node dist/main.js`, `npm start -- …`). A few flags only, each the
 * same as an environment variable it overrides; everything else is configured by the environment.
 * An unknown flag is an error: a flag that is silently ignored (`--port 8099` used to be) leaves
 * the service somewhere the operator does not expect.
 */

export const SERVER_USAGE = [
  'Usage: node dist/main.js [--role api|worker|all] [--port N] [--host ADDRESS]',
  '       npm start -- [the same flags]',
  '',
  'Starts the Matricula service.',
  '',
  '  --role ROLE      api, worker or all (default: ROLE, else all)',
  '  --port N         port of the API, 0 to 65535 (default: PORT, else 8080)',
  '  --host ADDRESS   address to listen on (default: HOST, else 0.0.0.0)',
  '  -h, --help       print this and exit',
  '  -v, --version    print the version and exit',
  '',
  "Everything else is set by environment variables: see the README's Configuration section.",
].join('\n');

/** What the command line asks for: help, the version, or to run with these variables overridden. */
export type ServerArgs =
  { action: 'help' } | { action: 'version' } | { action: 'run'; env: { ROLE?: string; PORT?: string; HOST?: string } };

/** A command line the service does not understand; the message says what is wrong. */
export class ServerArgsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServerArgsError';
  }
}

export function parseServerArgs(argv: readonly string[]): ServerArgs {
  let values: { role?: string; port?: string; host?: string; help?: boolean; version?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        role: { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new ServerArgsError(argumentProblem(err));
  }
  if (values.help) return { action: 'help' };
  if (values.version) return { action: 'version' };
  const env: { ROLE?: string; PORT?: string; HOST?: string } = {};
  if (values.role !== undefined) env.ROLE = values.role;
  if (values.port !== undefined) {
    if (!/^\d{1,5}$/.test(values.port) || Number(values.port) > 65535)
      throw new ServerArgsError(`--port must be a whole number from 0 to 65535 (got "${values.port}")`);
    env.PORT = values.port;
  }
  if (values.host !== undefined) {
    if (values.host === '') throw new ServerArgsError('--host must not be empty');
    env.HOST = values.host;
  }
  return { action: 'run', env };
}

/** node:util's parse errors, in a sentence that names the flag and not node's internals. */
function argumentProblem(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: string }).code;
  const unknown = /Unknown option '([^']+)'/.exec(message);
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown) return `unknown flag ${unknown[1]}`;
  const positional = /Unexpected argument '([^']+)'/.exec(message);
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' && positional)
    return `unexpected argument "${positional[1]}": the service takes flags only`;
  const missing = /Option '(-\w, )?(--[\w-]+) <value>' argument missing/.exec(message);
  if (missing) return `${missing[2]} needs a value`;
  return message;
}

/** The service's version, from the package.json beside src/ (and beside dist/ in the compiled build). */
export function serverVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}
