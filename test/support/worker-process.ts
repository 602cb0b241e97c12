import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { listeningPortIn } from './server.ts';
import { serviceArgs } from './service-process.ts';

/**
 * A real worker process, `src/main.ts --role worker` as an operator runs it (tsx, or the compiled
 * build: see service-process.ts). The worker role does not listen on any port, so several can run side by side.
 */
export interface WorkerProcess {
  child: ChildProcess;
  /** Resolves when the process logged that it is running (its delivery worker started). */
  ready: Promise<void>;
  /** Resolves with the exit code or signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything it wrote, for failure messages. */
  output(): string;
  /**
   * For `api` and `all`, once ready: the port it listens on. It starts with PORT=0 unless `env`
   * says otherwise, so the kernel picks a free port and the process logs it (no port race).
   */
  port(): number;
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export function spawnWorker(databaseUrl: string, env: Record<string, string> = {}): WorkerProcess {
  return spawnService(databaseUrl, env, 'worker');
}

/**
 * The service as a process in any role; `ready` resolves once it logged that it runs (for `api`
 * and `all`, that it listens). Log lines are in `output()`.
 */
export function spawnService(
  databaseUrl: string,
  env: Record<string, string> = {},
  role: 'worker' | 'api' | 'all' = 'worker',
): WorkerProcess {
  const readyLine = role === 'worker' ? 'Matricula worker is running' : 'Matricula is listening';
  const child = spawn(process.execPath, serviceArgs('--role', role), {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      OUTBOUND_ALLOW_PRIVATE_TARGETS: 'true',
      LOG_LEVEL: 'info',
      PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = once(child, 'exit').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(readyLine)) resolve();
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`${role} process exited (${code ?? signal}) before it was ready:\n${output}`)),
    );
  });
  // A rejection after readiness (the process exiting later) is expected, not an error.
  ready.catch(() => undefined);
  const port = () => {
    const listening = listeningPortIn(output);
    if (listening === undefined) throw new Error(`the ${role} process has not logged its port:\n${output}`);
    return listening;
  };
  return { child, ready, exited, output: () => output, port };
}
