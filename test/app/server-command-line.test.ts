import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
// unusedPort: these tests are about choosing the port (--port, PORT for npm start), so they must name one.
import { unusedPort } from '../support/server.ts';

/**
 * The service's own command line, as a new operator meets it: `--help` and `--version` answer and
 * exit, an unknown flag is an error that says which, and `--port`/`--host` are honoured (they used
 * to be ignored silently, `--help` started the service).
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe('the service command line', () => {
  const dir = mkdtempSync(join(tmpdir(), 'matricula-command-line-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A database path that must stay untouched: the flags that answer and exit open nothing. */
  const UNTOUCHED = join(dir, 'never', 'created.sqlite');

  function server(args: string[], nodeFlags: string[] = []) {
    return spawnSync(process.execPath, [...nodeFlags, '--import', 'tsx', 'src/main.ts', ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, DATABASE_URL: `sqlite:${UNTOUCHED}`, PORT: '1', LOG_LEVEL: 'silent' },
    });
  }

  // -h and -v, and the other refusals, are checked in config.test.ts: each process here takes seconds.
  test('--help prints the usage and exits 0, without starting anything', () => {
    for (const flag of ['--help']) {
      const res = server([flag]);
      assert.equal(res.status, 0, res.stderr);
      assert.match(
        res.stdout,
        /^Usage: node dist\/main\.js \[--role api\|worker\|all\] \[--port N\] \[--host ADDRESS\]/,
      );
      assert.match(res.stdout, /--version/);
      assert.equal(res.stderr, '');
    }
  });

  test('--version prints the version and exits 0', () => {
    for (const flag of ['--version']) {
      const res = server([flag]);
      assert.equal(res.status, 0, res.stderr);
      assert.equal(res.stdout, `${VERSION}\n`);
    }
  });

  test('--help, --version and a bad flag answer without loading the service (src/serve.ts)', () => {
    // A preload that says, as the process exits, whether Fastify (a CommonJS package the service
    // loads, so it shows in require.cache) was loaded.
    const probe = join(dir, 'loaded-fastify.cjs');
    writeFileSync(
      probe,
      "process.on('exit', () => process.stderr.write('fastify loaded: ' + " +
        "Object.keys(require.cache).some((k) => k.includes('/node_modules/fastify/')) + '\\n'));\n",
    );
    for (const args of [['--help'], ['--version'], ['--prot', '1']]) {
      const res = server(args, ['--require', probe]);
      assert.match(res.stderr, /fastify loaded: false$/m, `${args.join(' ')}: ${res.stderr}`);
    }
    // And it does see the service when it is loaded.
    const running = spawnSync(
      process.execPath,
      ['--require', probe, '--import', 'tsx', '-e', "import('./src/serve.ts')"],
      {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    assert.match(running.stderr, /fastify loaded: true$/m, running.stderr);
  });

  test('an unknown flag or an argument is an error naming it, exit 2', () => {
    for (const [args, message] of [
      [['--prot', '8099'], /^Error: unknown flag --prot\n\nUsage: /],
      [['serve'], /^Error: unexpected argument "serve": the service takes flags only\n/],
    ] as const) {
      const res = server([...args]);
      assert.equal(res.status, 2, `${args.join(' ')}: ${res.stdout}`);
      assert.match(res.stderr, message);
    }
    assert.equal(spawnSync('test', ['-e', join(dir, 'never')]).status, 1, 'no database was opened');
  });

  test('--port and --host are where the service listens; --role is still read', { timeout: 90_000 }, async () => {
    const port = await unusedPort();
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/main.ts', '--port', String(port), '--host', '127.0.0.1', '--role', 'all'],
      {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'port.sqlite')}`, PORT: '1', LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      while (!output.includes('Matricula is listening')) {
        if (child.exitCode !== null) assert.fail(`the service exited: ${output}`);
        await once(child.stdout, 'data');
      }
      const listening = JSON.parse(output.split('\n').find((line) => line.includes('Matricula is listening'))!);
      assert.equal(listening.role, 'all');
      assert.equal(listening.baseUrl, `http://localhost:${port}`);
      assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
    } finally {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
    }
  });

  /** Whether anything accepts connections on the port (a refused connection means nothing listens). */
  async function listening(port: number): Promise<boolean> {
    const socket = connect(port, '127.0.0.1');
    try {
      await once(socket, 'connect');
      return true;
    } catch {
      return false;
    } finally {
      socket.destroy();
    }
  }

  /**
   * `npm start` must stop when it is told to: SIGTERM to the npm process (a supervisor, `kill`), and
   * Ctrl-C (SIGINT to the terminal's whole process group). With `tsx src/main.ts` a SIGTERM to npm
   * left tsx's child holding the port.
   */
  for (const [how, signal, group] of [
    ['SIGTERM to the npm process', 'SIGTERM', false],
    ['Ctrl-C (SIGINT to the process group)', 'SIGINT', true],
  ] as const) {
    test(`npm start: ${how} stops the service and frees its port`, { timeout: 120_000 }, async () => {
      const port = await unusedPort();
      const npm = spawn('npm', ['start', '--', '--port', String(port), '--host', '127.0.0.1'], {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, `npm-${signal}.sqlite`)}`, LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
        // A process group of its own, as a terminal gives a foreground job, so that Ctrl-C can be sent to it.
        detached: true,
      });
      let output = '';
      npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = once(npm, 'exit');
      try {
        while (!output.includes('Matricula is listening')) {
          if (npm.exitCode !== null) assert.fail(`npm start exited: ${output}`);
          await once(npm.stdout, 'data');
        }
        assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
        if (group) process.kill(-npm.pid!, signal);
        else npm.kill(signal);
        await exited;
        assert.equal(await listening(port), false, `the service still listens on ${port} after npm exited: ${output}`);
        assert.match(output, /"msg":"stopping"/, 'the service itself got the signal and stopped gracefully');
      } finally {
        // Whatever happened above, nothing of this test keeps running.
        try {
          process.kill(-npm.pid!, 'SIGKILL');
        } catch {
          // The group is gone already: the expected case.
        }
      }
    });
  }
});
