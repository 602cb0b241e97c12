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

/** Where a context writes: the process's streams by default; tests capture the text. */
export interface CliOutput {
  stdout(text: string): void;
  stderr(text: string): void;
}

const PROCESS_OUTPUT: CliOutput = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/**
 * The context of a run: the environment (`process.env` for the `matricula` program), where it
 * writes (each text ends with a newline), the system clock, and the store opened on first use.
 */
export function defaultContext(
  env: Record<string, string | undefined> = process.env,
  output: CliOutput = PROCESS_OUTPUT,
): CliContext & { close(): Promise<void> } {
  let store: Store | undefined;
  let config: Config | undefined;
  const line = (text: string) => (text.endsWith('\n') ? text : `${text}\n`);
  const ctx = {
    env,
    stdout: (text: string) => output.stdout(line(text)),
    stderr: (text: string) => output.stderr(line(text)),
    clock: systemClock,
    config: () => (config ??= loadConfig(env)),
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
