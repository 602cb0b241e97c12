import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { bn254 } from '@noble/curves/bn254';
import { ConfigError, loadConfig } from '../../src/config.ts';
import {
  BN254_R,
  GROTH16_ARTIFACTS,
  createGroth16Verifier,
  decodeVerificationKey,
  loadLiveVerificationKey,
  loadSandboxVerificationKey,
  loadVerificationKey,
  verifyGroth16,
  VerificationKeyError,
  type Groth16Proof,
  type Groth16VerificationKey,
} from '../../src/proofs/groth16/index.ts';

/**
 * Finding 1 of the adversarial review (issue 10): a degenerate live Groth16 verification key lets
 * anyone forge a live proof. The fixture is a real `snarkjs groth16 setup` output, before any
 * phase-2 contribution: scripts/groth16-build.sh up to `groth16 setup` (same circuit, r1cs
 * sha256 as in build-info.json, same phase-1 beacon), then `snarkjs zkey export verificationkey
 * c_0000.zkey`. γ = δ = the G2 generator. It equals the committed sandbox key with δ reset to the
 * generator, since phase-2 contributions change only δ. No proving here.
 */
const SETUP_KEY = new URL('../fixtures/groth16-setup-before-contribution.vk.json', import.meta.url).pathname;
const ROOT = new URL('../..', import.meta.url).pathname;

const dir = mkdtempSync(join(tmpdir(), 'matricula-vk-keys-'));

type G1 = ReturnType<typeof bn254.G1.ProjectivePoint.fromAffine>;
type G2 = ReturnType<typeof bn254.G2.ProjectivePoint.fromAffine>;
const { Fp2 } = bn254.fields;
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

const g1Json = (p: G1): string[] => {
  const { x, y } = p.toAffine();
  return [String(x), String(y), '1'];
};
/** snarkjs JSON of a G2 point (no validity check: used to build invalid points too). */
const g2Json = (p: { x: { c0: bigint; c1: bigint }; y: { c0: bigint; c1: bigint } }): string[][] => [
  [String(p.x.c0), String(p.x.c1)],
  [String(p.y.c0), String(p.y.c1)],
  ['1', '0'],
];
const g2 = (json: string[][]): G2 => {
  const [[x0, x1], [y0, y1]] = json.map((c) => c.map(BigInt));
  return bn254.G2.ProjectivePoint.fromAffine({ x: Fp2.fromBigTuple([x0, x1]), y: Fp2.fromBigTuple([y0, y1]) });
};

/** Writes `vk` (a changed copy of the sandbox key unless given) to a file and returns its path. */
function keyFile(name: string, change: (vk: Record<string, any>) => void, base = GROTH16_ARTIFACTS.verificationKey) {
  const vk = readJson(base);
  change(vk);
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify(vk));
  return path;
}

/** A point on the G2 twist outside the r-torsion subgroup (G2's cofactor is huge: almost any point). */
function g2OutsideSubgroup(): { x: { c0: bigint; c1: bigint }; y: { c0: bigint; c1: bigint } } {
  for (let i = 1n; ; i++) {
    const x = Fp2.fromBigTuple([i, 1n]);
    const rhs = Fp2.add(Fp2.mul(Fp2.sqr(x), x), bn254.G2.CURVE.b);
    let y;
    try {
      y = Fp2.sqrt(rhs);
    } catch {
      continue;
    }
    if (!y || !Fp2.eql(Fp2.sqr(y), rhs)) continue;
    const point = bn254.G2.ProjectivePoint.fromAffine({ x, y });
    if (
      !point
        .multiplyUnsafe(BN254_R - 1n)
        .add(point)
        .is0()
    )
      return { x, y }; // r·P ≠ O
  }
}

/** The forgery of Finding 1: A = α, B = β, C = −vk_x; it holds whenever δ = γ, for any signals. */
function forge(vk: Groth16VerificationKey, signals: bigint[]): Groth16Proof {
  let vkX = vk.ic[0];
  signals.forEach((s, i) => {
    if (s !== 0n) vkX = vkX.add(vk.ic[i + 1].multiplyUnsafe(s));
  });
  return { a: vk.alpha, b: vk.beta, c: vkX.negate() };
}

// Any statement: an active, unexpired student of an issuer nobody registered, for any session.
const ANY_SIGNALS = [1n, 1n, 0n, 11n, 13n, 17n, 19n, 1795255200n, 0n];

describe('groth16 live verification key (Finding 1)', () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('Finding 1: the fixture is what snarkjs groth16 setup writes: γ = δ = the G2 generator', () => {
    const vk = decodeVerificationKey(readJson(SETUP_KEY));
    assert.ok(vk.gamma.equals(bn254.G2.ProjectivePoint.BASE));
    assert.ok(vk.delta.equals(bn254.G2.ProjectivePoint.BASE));
    // The attack is real: against this key the forgery verifies, for a statement nobody proved.
    assert.equal(verifyGroth16(vk, forge(vk, ANY_SIGNALS), ANY_SIGNALS), true);
  });

  test('Finding 1: a key exported before any phase-2 contribution is refused at load', () => {
    assert.throws(
      () => loadLiveVerificationKey(SETUP_KEY),
      (err: unknown) => err instanceof VerificationKeyError && /vk_delta_2 is the G2 generator/.test(err.message),
    );
    assert.throws(() => createGroth16Verifier({ liveVerificationKeyPath: SETUP_KEY }), /vk_delta_2/);
    assert.throws(
      () => loadConfig({ GROTH16_LIVE_VERIFICATION_KEY: SETUP_KEY }),
      (err: unknown) =>
        err instanceof ConfigError && /^Invalid configuration: GROTH16_LIVE_VERIFICATION_KEY /.test(err.message),
    );
  });

  test('Finding 1: the forged proof cannot be accepted: the service refuses to start with that key', () => {
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        GROTH16_LIVE_VERIFICATION_KEY: SETUP_KEY,
        DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`,
        PORT: '0',
        HOST: '127.0.0.1',
      },
      encoding: 'utf8',
      // A service that accepts the key starts and keeps running: stop it, and the test fails.
      timeout: 45_000,
      killSignal: 'SIGKILL',
    });
    assert.equal(result.status, 1, result.stderr);
    const lines = result.stderr.trim().split('\n');
    assert.equal(lines.length, 1, result.stderr);
    assert.match(
      lines[0]!,
      /^Invalid configuration: GROTH16_LIVE_VERIFICATION_KEY .*setup-before-contribution\.vk\.json: vk_delta_2 is the G2 generator/,
    );
  });

  test('Finding 1: δ = ±γ is refused even when γ is not the generator', () => {
    const sandbox = readJson(GROTH16_ARTIFACTS.verificationKey);
    const equal = keyFile('gamma-is-delta', (vk) => {
      vk.vk_gamma_2 = sandbox.vk_delta_2;
    });
    const negated = keyFile('gamma-is-minus-delta', (vk) => {
      vk.vk_gamma_2 = g2Json(g2(sandbox.vk_delta_2).negate().toAffine());
    });
    for (const path of [equal, negated]) {
      const vk = decodeVerificationKey(readJson(path));
      const proof = forge(vk, ANY_SIGNALS);
      if (vk.gamma.equals(vk.delta.negate())) proof.c = proof.c.negate();
      assert.equal(verifyGroth16(vk, proof, ANY_SIGNALS), true, 'the forgery holds against this key');
      assert.throws(() => loadLiveVerificationKey(path), /vk_delta_2 equals ±vk_gamma_2/);
    }
    const minusGenerator = keyFile('delta-minus-generator', (vk) => {
      vk.vk_delta_2 = g2Json(bn254.G2.ProjectivePoint.BASE.negate().toAffine());
    });
    assert.throws(() => loadLiveVerificationKey(minusGenerator), /vk_delta_2 is the G2 generator/);
  });

  test('Finding 1: a point that is the identity, off its curve or outside its subgroup is refused', () => {
    const cases: Array<[string, (vk: Record<string, any>) => void, RegExp]> = [
      ['alpha-identity', (vk) => (vk.vk_alpha_1 = ['0', '1', '0']), /vk_alpha_1 is not a valid/],
      ['ic-identity', (vk) => (vk.IC[3] = ['0', '1', '0']), /IC\[3\] is not a valid/],
      ['ic-off-curve', (vk) => (vk.IC[2][1] = String(BigInt(vk.IC[2][1]) + 1n)), /IC\[2\] is not a valid/],
      ['beta-off-curve', (vk) => (vk.vk_beta_2[1][0] = String(BigInt(vk.vk_beta_2[1][0]) + 1n)), /vk_beta_2 is not/],
      ['delta-outside-subgroup', (vk) => (vk.vk_delta_2 = g2Json(g2OutsideSubgroup())), /vk_delta_2 is not a valid/],
      ['alpha-generator', (vk) => (vk.vk_alpha_1 = g1Json(bn254.G1.ProjectivePoint.BASE)), /phase 1/],
    ];
    for (const [name, change, pattern] of cases) {
      assert.throws(() => loadVerificationKey(keyFile(name, change)), pattern, name);
    }
  });

  test('Finding 1: an IC whose length does not match the circuit (nPublic + 1 = 10) is refused', () => {
    const longer = keyFile('ic-longer', (vk) => {
      vk.IC.push(vk.IC[1]);
      vk.nPublic += 1;
    });
    assert.throws(() => loadVerificationKey(longer), /10 public signals, the circuit has 9/);
    const disagreeing = keyFile('ic-disagrees', (vk) => vk.IC.pop());
    assert.throws(() => loadVerificationKey(disagreeing), /IC must have nPublic \+ 1 points/);
  });

  test('the committed sandbox key (from a beacon contribution) still loads; a ceremony key loads as live', () => {
    const sandbox = loadSandboxVerificationKey();
    assert.ok(sandbox.gamma.equals(bn254.G2.ProjectivePoint.BASE), 'γ is the generator in every snarkjs key');
    assert.ok(!sandbox.delta.equals(sandbox.gamma));
    assert.throws(() => loadLiveVerificationKey(GROTH16_ARTIFACTS.verificationKey), /public sandbox key/);
    const ceremony = keyFile('ceremony', (vk) => {
      vk.vk_delta_2 = g2Json(g2(vk.vk_delta_2).double().toAffine());
    });
    assert.equal(loadLiveVerificationKey(ceremony).nPublic, 9);
    assert.equal(loadConfig({ GROTH16_LIVE_VERIFICATION_KEY: ceremony }).groth16LiveVerificationKey, ceremony);
  });
});
