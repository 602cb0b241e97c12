import { defaultContext, type CliContext } from '../../src/cli/command.ts';
import { runCli } from '../../src/cli/main.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { retryingCatalogueRaces } from './harness.ts';

/** What a `matricula` run gave: its exit code and what it wrote. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the `matricula` command in this process, as bin/matricula does in its own (`runCli` with
 * the environment given and the output captured). A spawned command costs a test 1.5 to 2.5 s of
 * CPU to load tsx and the service's modules again; test/cli/cli.test.ts keeps spawning the real
 * program for what only a process shows (exit codes, streams).
 */
export async function runCliInProcess(env: Record<string, string | undefined>, args: string[]): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const context = defaultContext(
    { ...process.env, ...env },
    { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text) },
  );
  // The command migrates the database it opens (a no-op here: the test migrated it) without the
  // test schema lock, as a spawned CLI does: another file's schema dropped meanwhile fails the
  // migrator's catalogue query, so that race is retried (test/support/harness.ts).
  const schema = /search_path(?:=|%3D)(t_[0-9a-f]+)/.exec(env.DATABASE_URL ?? '')?.[1];
  const open = context.openStore.bind(context);
  if (schema) context.openStore = () => retryingCatalogueRaces(schema, open);
  const code = await runCli(args, context);
  return { code, stdout, stderr };
}

/**
 * A CLI context for commands that talk to the service over HTTP only: what they write is kept,
 * line by line, and opening the database or reading the service's configuration fails the test
 * (unless `overrides` says otherwise).
 */
export function offlineCliContext(
  env: Record<string, string>,
  overrides: Partial<Pick<CliContext, 'clock' | 'config'>> = {},
): { ctx: CliContext; stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const ctx: CliContext = {
    env,
    stdout: (text) => stdout.push(text),
    stderr: (text) => stderr.push(text),
    clock: systemClock,
    openStore: () => Promise.reject(new Error('this command must not open the database')),
    config: () => {
      throw new Error('this command must not read the service configuration');
    },
    ...overrides,
  };
  return { ctx, stdout, stderr };
}
