import { parseArgs, type ParseArgsConfig } from 'node:util';
import { loadConfig, type Config } from '../config.ts';
import { systemClock, type Clock } from '../domain/clock.ts';
import { migrate, openStore, type Store } from '../store/db.ts';

/** Where a command writes and what it may open; tests pass their own. */
export interface CliContext {
  env: Record<string, string | undefined>;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  clock: Clock;
  /** Opens (and migrates) the database named by DATABASE_URL; closed by the runner. */
  openStore(): Promise<Store>;
  config(): Config;
  /** Ends a long-running command (listen, events tail) as Ctrl-C does; tests pass their own. */
  signal?: AbortSignal;
}

export interface Command {
  /** Words that select it, e.g. ['org', 'create']. */
  path: string[];
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  run(values: Record<string, string | boolean | undefined>, positionals: string[], ctx: CliContext): Promise<number>;
}

/** A usage error: printed with the command's usage, exit code 2. */
export class UsageError extends Error {}

export function parseCommandArgs(command: Command, argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

export function requireOption(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

export function defaultContext(): CliContext & { close(): Promise<void> } {
  let store: Store | undefined;
  let config: Config | undefined;
  const ctx = {
    env: process.env,
    stdout: (text: string) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    stderr: (text: string) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
    clock: systemClock,
    config: () => (config ??= loadConfig(process.env)),
    openStore: async () => {
      if (!store) {
        store = await openStore(ctx.config().databaseUrl);
        await migrate(store);
      }
      return store;
    },
    close: async () => {
      await store?.close();
    },
  };
  return ctx;
}

export function printJson(ctx: CliContext, value: unknown): void {
  ctx.stdout(JSON.stringify(value, null, 2));
}
