import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { systemClock } from '../../src/domain/clock.ts';
import { ApiError } from '../../src/errors.ts';
import { loadHolderBuilders, type ModuleLoader } from '../../src/proofs/builders.ts';
import { CREDENTIAL_FORMATS } from '../../src/proofs/types.ts';
import { createServiceDeps } from '../../src/services/deps.ts';
import { createOrganization } from '../../src/services/organizations.ts';
import { buildSandboxPresentation, sandboxFormats } from '../../src/services/sandbox-wallet.ts';
import {
  createTestStore,
  forEachDialect,
  useHarness,
  type Harness,
  type Tenant,
  type TestStore,
} from '../support/harness.ts';
import { ROOT, staticImportGraph } from '../support/import-graph.ts';
import { listeningPortIn } from '../support/server.ts';
import { createSession } from '../support/sessions.ts';

/**
 * An install with `npm ci --omit=dev` has no devDependencies: the service must start and work,
 * and the sandbox wallet offer only the formats it can build (groth16 proves with snarkjs and
 * circomlibjs, devDependencies), saying why not the others.
 */

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const WITHOUT_DEV = pathToFileURL(join(ROOT, 'test/support/without-dev-dependencies.mjs')).href;
const GROTH16_MISSING =
  'groth16 needs the development dependencies snarkjs and circomlibjs (npm ci without --omit=dev).';
const STUDENT = {
  university: 'sandbox-state.example',
  active: true,
  academicLevel: 'undergraduate',
  expired: false,
} as const;

/** A loader for which `missing` are not installed. */
const without =
  (...missing: string[]): ModuleLoader =>
  async (specifier) => {
    if (missing.includes(specifier))
      throw Object.assign(new Error(`Cannot find package '${specifier}'`), { code: 'ERR_MODULE_NOT_FOUND' });
    return import(specifier);
  };

describe('the run-time import graph', () => {
  test('the service and the CLI statically import declared dependencies only, never a devDependency', () => {
    // src/serve.ts is the service that src/main.ts imports once its command line is valid.
    const { files, packages } = staticImportGraph(['src/main.ts', 'src/serve.ts', 'src/cli/main.ts']);
    assert.ok(
      files.includes('src/app.ts') && files.includes('src/cli/wallet.ts'),
      'the walk reaches the app and the CLI',
    );
    const dev = packages.filter((p) => p.name in pkg.devDependencies).map((p) => `${p.importer} imports ${p.name}`);
    assert.deepEqual(dev, [], 'a devDependency is missing after npm ci --omit=dev');
    const undeclared = packages
      .filter((p) => !(p.name in pkg.dependencies))
      .map((p) => `${p.importer} imports ${p.name}`);
    assert.deepEqual(undeclared, [], 'every package the service imports is in dependencies');
    assert.ok(
      !files.includes('src/proofs/groth16/builder.ts'),
      'the Groth16 prover is loaded on use, not with the service',
    );
  });

  test('the walk does see a static devDependency import', () => {
    const { packages } = staticImportGraph(['bench/proofs.ts']);
    assert.ok(packages.some((p) => p.name === 'snarkjs' && p.importer === 'bench/proofs.ts'));
  });
});

describe('holder-side builders', () => {
  test('with every package installed, every format but jwt-vc has its builder', async () => {
    const holder = await loadHolderBuilders();
    for (const format of CREDENTIAL_FORMATS) {
      const entry = holder[format];
      if (format === 'jwt-vc') {
        // The simulated wallets hold no W3C credential: the sandbox wallet says so instead of offering it.
        assert.equal(entry.available, false);
        continue;
      }
      assert.ok(entry.available, format);
      assert.equal(entry.builder.format, format);
    }
    assert.deepEqual(sandboxFormats(['sd-jwt-vc', 'bbs', 'groth16'], holder), {
      offered: ['sd-jwt-vc', 'bbs', 'groth16'],
      unavailable: [],
    });
  });

  test('without snarkjs or circomlibjs, groth16 is unavailable and the wallet offers the others, saying why', async () => {
    for (const missing of ['snarkjs', 'circomlibjs']) {
      const holder = await loadHolderBuilders(without(missing));
      assert.deepEqual(holder.groth16, { available: false, reason: GROTH16_MISSING }, missing);
      assert.deepEqual(sandboxFormats(['sd-jwt-vc', 'bbs', 'groth16'], holder), {
        offered: ['sd-jwt-vc', 'bbs'],
        unavailable: [{ format: 'groth16', reason: GROTH16_MISSING }],
      });
      assert.deepEqual(
        sandboxFormats(['bbs'], holder),
        { offered: ['bbs'], unavailable: [] },
        'only accepted formats are listed',
      );
    }
  });
});

forEachDialect('sandbox presentation of a format this installation cannot build', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  test('is an invalid_request on format that says what to install; the other formats build', async () => {
    const deps = createServiceDeps({ db: h.store.db, clock: h.clock, config: h.config });
    const holder = await loadHolderBuilders(without('snarkjs'));
    const s = await createSession(h, tenant);
    const input = { sessionId: s.sessionId, nonce: s.challengeNonce, student: STUDENT };
    await assert.rejects(buildSandboxPresentation(deps, { ...input, format: 'groth16' }, holder), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.code, 'invalid_request');
      assert.equal(err.param, 'format');
      assert.equal(
        err.message,
        `The sandbox wallet cannot answer in groth16. ${GROTH16_MISSING} It answers in sd-jwt-vc, bbs.`,
      );
      return true;
    });
    const built = await buildSandboxPresentation(deps, { ...input, format: 'sd-jwt-vc' }, holder);
    assert.equal(built.format, 'sd-jwt-vc');
  });
});

/** `node --import tsx --import without-dev-dependencies.mjs src/main.ts`, on its own port. */
async function startServiceWithoutDev(
  databaseUrl: string,
): Promise<{ child: ChildProcess; baseUrl: string; output: () => string }> {
  // PORT=0: the kernel picks the port, read back from the log; BASE_URL need not name it here.
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', WITHOUT_DEV, 'src/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Matricula is listening')) resolve();
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('exit', (code) => reject(new Error(`the service exited (${code}) before listening:\n${output}`)));
  });
  const port = listeningPortIn(output);
  if (port === undefined) throw new Error(`the service did not log its port:\n${output}`);
  return { child, baseUrl: `http://127.0.0.1:${port}`, output: () => output };
}

// SQLite only: this is about packaging, not storage (each start costs seconds of tsx compiling),
// and the static walk above already holds the PostgreSQL driver to dependencies.
describe('the service installed without devDependencies', () => {
  let testStore: TestStore;
  let service: Awaited<ReturnType<typeof startServiceWithoutDev>>;
  let auth: { authorization: string; 'content-type': string };
  let appId: string;

  before(async () => {
    testStore = await createTestStore('sqlite');
    const created = await createOrganization(
      { db: testStore.store.db, clock: systemClock },
      { name: 'Omit dev', environment: 'sandbox' },
    );
    auth = { authorization: `Bearer ${created.apiKey.rawSecret}`, 'content-type': 'application/json' };
    appId = created.application.id;
    service = await startServiceWithoutDev(testStore.url);
  });
  after(async () => {
    if (service && service.child.exitCode === null) {
      const exited = once(service.child, 'exit');
      service.child.kill('SIGTERM');
      await exited;
    }
    await testStore?.drop();
  });

  const post = (
    path: string,
    body: unknown,
    headers: Record<string, string> = { 'content-type': 'application/json' },
  ) => fetch(`${service.baseUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  const newSession = async () => {
    const res = await post(
      '/verification/v1/sessions',
      { appId, purpose: 'Omit dev', requiredClaims: ['is_active_student'] },
      auth,
    );
    assert.equal(res.status, 201);
    return (await res.json()).data as { sessionId: string; challengeNonce: string; qrPayload: string };
  };

  test('starts, answers /readyz, and the sandbox wallet offers the formats it can build, saying why not groth16', async () => {
    assert.deepEqual(await (await fetch(`${service.baseUrl}/readyz`)).json(), { status: 'ready', database: 'ok' });
    const s = await newSession();
    const page = await fetch(`${service.baseUrl}/wallet?payload=${encodeURIComponent(s.qrPayload)}`);
    assert.equal(page.status, 200);
    const body = await page.text();
    assert.deepEqual(
      [...body.matchAll(/name="format" value="([^"]+)"/g)].map((m) => m[1]),
      ['sd-jwt-vc', 'bbs'],
    );
    assert.ok(body.includes(GROTH16_MISSING), 'the page says why groth16 is not offered');
  });

  test('builds and verifies sd-jwt-vc; groth16 is a 400 that says what to install', async () => {
    const s = await newSession();
    const student = STUDENT;
    const refused = await post('/wallet/sandbox/presentation', {
      sessionId: s.sessionId,
      nonce: s.challengeNonce,
      format: 'groth16',
      student,
    });
    assert.equal(refused.status, 400);
    const error = (await refused.json()).error;
    assert.equal(error.code, 'invalid_request');
    assert.ok(error.message.includes(GROTH16_MISSING), error.message);

    const session = `/verification/v1/sessions/${s.sessionId}`;
    assert.equal((await post(`${session}/consent`, { nonce: s.challengeNonce, decision: 'approved' })).status, 200);
    const built = await post('/wallet/sandbox/presentation', {
      sessionId: s.sessionId,
      nonce: s.challengeNonce,
      format: 'sd-jwt-vc',
      student,
    });
    assert.equal(built.status, 200);
    const { presentation } = (await built.json()).data;
    const answered = await post(`${session}/presentation`, {
      nonce: s.challengeNonce,
      format: 'sd-jwt-vc',
      presentation,
    });
    assert.deepEqual((await answered.json()).data, {
      sessionId: s.sessionId,
      status: 'completed',
      verified: true,
      failureReason: null,
      failureMessage: null,
    });
  });
});

describe('the CLI wallet installed without devDependencies', () => {
  const cli = async (...args: string[]) => {
    const env = {
      ...process.env,
      NODE_OPTIONS: `--import=${WITHOUT_DEV}`,
      BASE_URL: 'http://matricula.test',
      LOG_LEVEL: 'silent',
    };
    try {
      const { stdout, stderr } = await promisify(execFile)('./bin/matricula', args, { cwd: ROOT, env });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };

  test('groth16 fails with the sentence that says what to install; sd-jwt-vc still works', async () => {
    const groth16 = await cli('wallet', 'presentation', '--format', 'groth16', '--nonce', 'nonce_x');
    assert.equal(groth16.code, 1);
    assert.equal(groth16.stderr.trim(), `Error: ${GROTH16_MISSING}`);
    const sdJwt = await cli('wallet', 'presentation', '--format', 'sd-jwt-vc', '--nonce', 'nonce_x');
    assert.equal(sdJwt.code, 0, sdJwt.stderr);
    assert.equal(JSON.parse(sdJwt.stdout).format, 'sd-jwt-vc');
  });
});
