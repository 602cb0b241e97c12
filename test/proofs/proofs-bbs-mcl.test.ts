import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { before, describe, test } from 'node:test';
import { deriveProof, generateKeyPair, sign, verifyProof } from '@digitalbazaar/bbs-signatures';
import { bls12_381 } from '@noble/curves/bls12-381';
import { expand_message_xmd } from '@noble/curves/abstract/hash-to-curve';
import { bytesToNumberBE, numberToBytesBE } from '@noble/curves/abstract/utils';
import { sha256 } from '@noble/hashes/sha256';
import mcl from 'mcl-wasm';
import { verifyBbsProofMcl, type BbsVerifyArgs } from '../../src/proofs/bbs/mcl-verifier.ts';
import { initMcl } from '../../src/proofs/groth16/mcl-verifier.ts';

/**
 * The WebAssembly BBS verifier (bbs/mcl-verifier.ts) against the draft's published fixtures and
 * against @digitalbazaar/bbs-signatures, which the service used before and keeps as the
 * reference: on every proof below, valid or broken in one place, both must give the same answer.
 */

const CIPHERSUITE = 'BLS12-381-SHA-256';
const bytes = (hex: string) => Uint8Array.from(Buffer.from(hex, 'hex'));
const text = (s: string) => new TextEncoder().encode(s);

interface Fixture {
  name: string;
  publicKey: string;
  proof: string;
  header: string;
  presentationHeader: string;
  disclosedMessages: string[];
  disclosedMessageIndexes: number[];
  valid: boolean;
}

const fixtures = (
  JSON.parse(readFileSync(new URL('../fixtures/bbs-cfrg/bls12-381-sha-256-proofs.json', import.meta.url), 'utf8')) as {
    proofVerify: Fixture[];
  }
).proofVerify;

function fixtureArgs(f: Fixture): BbsVerifyArgs {
  return {
    publicKey: bytes(f.publicKey),
    proof: bytes(f.proof),
    header: bytes(f.header),
    presentationHeader: bytes(f.presentationHeader),
    disclosedMessages: f.disclosedMessages.map(bytes),
    disclosedMessageIndexes: f.disclosedMessageIndexes,
    ciphersuite: CIPHERSUITE,
  };
}

/** The library's answer, a throw (bytes that do not decode) counted as false as the service does. */
const library = (args: BbsVerifyArgs) => verifyProof(args).catch(() => false);

describe('BBS ProofVerify on mcl-wasm: the CFRG draft fixtures', () => {
  test('has the fixtures: five valid proofs and seven that must fail', () => {
    assert.equal(fixtures.filter((f) => f.valid).length, 5);
    assert.equal(fixtures.filter((f) => !f.valid).length, 7);
  });

  for (const fixture of fixtures) {
    test(`${fixture.name}: ${fixture.valid ? 'holds' : 'does not hold'}, as the library says`, async () => {
      const args = fixtureArgs(fixture);
      assert.equal(await verifyBbsProofMcl(args), fixture.valid);
      assert.equal(await library(args), fixture.valid);
    });
  }
});

describe('BBS ProofVerify on mcl-wasm agrees with @digitalbazaar/bbs-signatures', () => {
  let keys: { secretKey: Uint8Array; publicKey: Uint8Array };
  let otherKey: Uint8Array;
  const header = text('issuer header');
  const ph = text('presentation header');
  const messages = Array.from({ length: 9 }, (_, i) => text(`claim ${i}: ${'x'.repeat(i)}`));
  let signature: Uint8Array;

  before(async () => {
    keys = await generateKeyPair({ seed: new Uint8Array(32).fill(7), ciphersuite: CIPHERSUITE });
    otherKey = (await generateKeyPair({ seed: new Uint8Array(32).fill(8), ciphersuite: CIPHERSUITE })).publicKey;
    signature = await sign({ ...keys, header, messages, ciphersuite: CIPHERSUITE });
  });

  async function proofOf(indexes: number[], msgs = messages, sig = signature): Promise<BbsVerifyArgs> {
    const proof = await deriveProof({
      publicKey: keys.publicKey,
      signature: sig,
      header,
      presentationHeader: ph,
      messages: msgs,
      disclosedMessageIndexes: indexes,
      ciphersuite: CIPHERSUITE,
    });
    return {
      publicKey: keys.publicKey,
      proof,
      header,
      presentationHeader: ph,
      disclosedMessages: indexes.map((i) => msgs[i]!),
      disclosedMessageIndexes: indexes,
      ciphersuite: CIPHERSUITE,
    };
  }

  async function agree(args: BbsVerifyArgs, expected: boolean, what: string): Promise<void> {
    assert.equal(await library(args), expected, `library: ${what}`);
    assert.equal(await verifyBbsProofMcl(args), expected, `mcl: ${what}`);
  }

  test('valid proofs of every disclosure shape hold for both', async () => {
    const shapes = [[], [0], [8], [0, 1, 2, 3, 4, 5, 6, 7, 8], [1, 3, 5, 7], [2, 6, 8]];
    for (const indexes of shapes) await agree(await proofOf(indexes), true, `disclosing [${indexes.join(',')}]`);
    // Other message counts use other (cached) generator prefixes.
    for (const count of [1, 2, 14]) {
      const msgs = Array.from({ length: count }, (_, i) => text(`m${i}`));
      const sig = await sign({ ...keys, header, messages: msgs, ciphersuite: CIPHERSUITE });
      await agree(await proofOf([0], msgs, sig), true, `${count} messages`);
    }
  });

  test('a proof changed in any one byte fails for both', async () => {
    const args = await proofOf([1, 4, 8]);
    // Every point and scalar of the proof: 3 points of 48 bytes, then 32-byte scalars.
    const offsets = [0, 47, 48, 100, 96 + 47];
    for (let at = 144; at < args.proof.length; at += 32) offsets.push(at + 31);
    for (const offset of offsets) {
      const proof = Uint8Array.from(args.proof);
      proof[offset]! ^= 0x01;
      await agree({ ...args, proof }, false, `byte ${offset} flipped`);
    }
  });

  test('what the verifier supplies must be what was signed and presented', async () => {
    const args = await proofOf([1, 4, 8]);
    const cases: Array<[string, BbsVerifyArgs]> = [
      ['another header', { ...args, header: text('issuer header!') }],
      ['another presentation header', { ...args, presentationHeader: text('presentation header!') }],
      ['an empty presentation header', { ...args, presentationHeader: new Uint8Array() }],
      ['another public key', { ...args, publicKey: otherKey }],
      ['a changed message', { ...args, disclosedMessages: [messages[1]!, text('changed'), messages[8]!] }],
      ['messages swapped', { ...args, disclosedMessages: [messages[4]!, messages[1]!, messages[8]!] }],
      ['another index', { ...args, disclosedMessageIndexes: [1, 5, 8] }],
      ['an index out of range', { ...args, disclosedMessageIndexes: [1, 4, 9] }],
      ['a repeated index', { ...args, disclosedMessageIndexes: [1, 1, 8] }],
      [
        'a message left out',
        { ...args, disclosedMessages: [messages[1]!, messages[4]!], disclosedMessageIndexes: [1, 4] },
      ],
      [
        'a message too many',
        {
          ...args,
          disclosedMessages: [...args.disclosedMessages, messages[0]!],
          disclosedMessageIndexes: [1, 4, 8, 0],
        },
      ],
    ];
    for (const [what, changed] of cases) await agree(changed, false, what);
  });

  test('a proof of a signature this key did not make fails for both: the challenge adds up, the pairing not', async () => {
    // Signed with one secret key under another public key: everything hashed names `otherKey`.
    const forged = await sign({
      secretKey: keys.secretKey,
      publicKey: otherKey,
      header,
      messages,
      ciphersuite: CIPHERSUITE,
    });
    const proof = await deriveProof({
      publicKey: otherKey,
      signature: forged,
      header,
      presentationHeader: ph,
      messages,
      disclosedMessageIndexes: [0, 3],
      ciphersuite: CIPHERSUITE,
    });
    const args: BbsVerifyArgs = {
      publicKey: otherKey,
      proof,
      header,
      presentationHeader: ph,
      disclosedMessages: [messages[0]!, messages[3]!],
      disclosedMessageIndexes: [0, 3],
      ciphersuite: CIPHERSUITE,
    };
    await agree(args, false, 'a signature of another key');
  });

  test('a proof forged from identity points, which needs no signature at all, fails for both', async () => {
    const args = forgeWithIdentityPoints(keys.publicKey, header, ph, messages);
    await agree(args, false, 'Abar = Bbar = T2 = identity');
  });

  test('points and scalars that do not decode fail for both', async () => {
    const args = await proofOf([0, 2]);
    const withBytes = (offset: number, replacement: Uint8Array) => {
      const proof = Uint8Array.from(args.proof);
      proof.set(replacement, offset);
      return { ...args, proof };
    };
    const identity = new Uint8Array(48);
    identity[0] = 0xc0;
    // A point on the curve outside the prime-order subgroup (G1 has a cofactor on BLS12-381).
    const outside = pointOutsideSubgroup();
    const order = bls12_381.fields.Fr.ORDER;
    const cases: Array<[string, BbsVerifyArgs]> = [
      ['Abar the identity', withBytes(0, identity)],
      ['D the identity', withBytes(96, identity)],
      ['Bbar outside the subgroup', withBytes(48, outside)],
      ['x not on the curve', withBytes(0, xNotOnCurve())],
      ['x not below p', withBytes(0, Uint8Array.from([0x80 | 0x1f, ...new Uint8Array(47).fill(0xff)]))],
      ['e^ equal to r', withBytes(144, Buffer.from(order.toString(16).padStart(64, '0'), 'hex'))],
      // Refused by the range check, and by the challenge anyway: agreement, not the check itself.
      ['the challenge zero', withBytes(args.proof.length - 32, new Uint8Array(32))],
      ['a proof cut short', { ...args, proof: args.proof.subarray(0, args.proof.length - 1) }],
      ['a proof too short for any message', { ...args, proof: args.proof.subarray(0, 3 * 48 + 3 * 32) }],
      ['a public key of the wrong length', { ...args, publicKey: args.publicKey.subarray(1) }],
      ['a public key that is the identity', { ...args, publicKey: Uint8Array.from([0xc0, ...new Uint8Array(95)]) }],
    ];
    for (const [what, changed] of cases) await agree(changed, false, what);
  });

  for (const order of ['bbs-first', 'groth16-first'] as const) {
    test(`in a fresh process, loaded ${order}: both verifiers work, each on its own curve`, () => {
      const out = execFileSync(
        process.execPath,
        ['--import', 'tsx', fileURLToPath(new URL('../support/mcl-load-order.ts', import.meta.url)), order],
        { encoding: 'utf8' },
      );
      assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1)!), { bbs: true, groth16: 'BN_SNARK1', bbsAgain: true });
    });
  }

  test('shares a thread with the Groth16 verifier: each keeps its own curve', async () => {
    await initMcl();
    assert.equal(mcl.curveType, mcl.BN_SNARK1);
    const valid = fixtures.find((f) => f.valid)!;
    assert.equal(await verifyBbsProofMcl(fixtureArgs(valid)), true);
    // Groth16's instance is still on BN_SNARK1, and a BN254 point still parses there.
    assert.equal(mcl.curveType, mcl.BN_SNARK1);
    const g = new mcl.G1();
    g.setStr('1 1 2', 10);
    assert.ok(g.isValid());
    assert.equal(await verifyBbsProofMcl(fixtureArgs(valid)), true);
  });

  test('a proof of more messages than the cap is refused, and the instance stays sound after one of thousands', async () => {
    const args = await proofOf([0, 2]);
    // 7 messages signed; pad the commitments (valid scalars) to claim 300 and then 6000 messages.
    const scalars = args.proof.subarray(3 * 48);
    const challenge = scalars.subarray(scalars.length - 32);
    const commitment = scalars.subarray(3 * 32, 4 * 32);
    const padded = (messagesClaimed: number) => {
      const commitments = messagesClaimed - 2;
      return Uint8Array.from(
        Buffer.concat([
          args.proof.subarray(0, 3 * 48 + 3 * 32),
          ...Array.from({ length: commitments }, () => commitment),
          challenge,
        ]),
      );
    };
    assert.equal(await verifyBbsProofMcl({ ...args, proof: padded(300) }), false);
    // Thousands of points would overrun mcl's stack and corrupt the instance; the cap comes first.
    assert.equal(await verifyBbsProofMcl({ ...args, proof: padded(6000) }), false);
    for (const fixture of fixtures) assert.equal(await verifyBbsProofMcl(fixtureArgs(fixture)), fixture.valid);
  });

  test('arguments that are not bytes are a proof that does not hold, not a throw', async () => {
    const args = await proofOf([0]);
    const notBytes = 'claim 0: ' as unknown as Uint8Array;
    assert.equal(await verifyBbsProofMcl({ ...args, disclosedMessages: [notBytes] }), false);
    assert.equal(await verifyBbsProofMcl({ ...args, header: notBytes }), false);
  });

  test('refuses a ciphersuite it does not implement, loudly', async () => {
    const args = await proofOf([0]);
    await assert.rejects(verifyBbsProofMcl({ ...args, ciphersuite: 'BLS12-381-SHAKE-256' }), /BLS12-381-SHA-256/);
  });
});

/**
 * The forgery the draft's identity checks exist for: with Abar = Bbar = identity the pairing
 * equation holds for any key, and every other value can be chosen after the fact. D = Bv·t and
 * T1 = D·s for chosen t and s, T2 = identity, then c is hashed and r3^ = -c/t makes
 * Bv·c + D·r3^ the identity, so T2 comes out as hashed. Written from the draft with
 * @noble/curves, independently of the verifier under test. All messages disclosed.
 */
function forgeWithIdentityPoints(
  publicKey: Uint8Array,
  header: Uint8Array,
  ph: Uint8Array,
  messages: Uint8Array[],
): BbsVerifyArgs {
  const { G1 } = bls12_381;
  const r = bls12_381.fields.Fr.ORDER;
  const apiId = text('BBS_BLS12381G1_XMD:SHA-256_SSWU_RO_H2G_HM2S_');
  const cat = (...parts: Uint8Array[]) => Uint8Array.from(Buffer.concat(parts));
  const int8 = (n: number) => numberToBytesBE(n, 8);
  const scalar = (n: bigint) => numberToBytesBE(n, 32);
  const hashToScalar = (msg: Uint8Array, dst: Uint8Array) =>
    bytesToNumberBE(expand_message_xmd(msg, dst, 48, sha256)) % r;
  const seedDst = cat(apiId, text('SIG_GENERATOR_SEED_'));
  let v = expand_message_xmd(cat(apiId, text('MESSAGE_GENERATOR_SEED')), seedDst, 48, sha256);
  const gens = Array.from({ length: messages.length + 1 }, (_, i) => {
    v = expand_message_xmd(cat(v, int8(i + 1)), seedDst, 48, sha256);
    const p = G1.hashToCurve(v, { DST: cat(apiId, text('SIG_GENERATOR_DST_')) });
    return G1.ProjectivePoint.fromAffine(p.toAffine());
  });
  const h2sDst = cat(apiId, text('H2S_'));
  const domain = hashToScalar(
    cat(publicKey, int8(messages.length), ...gens.map((g) => g.toRawBytes(true)), apiId, int8(header.length), header),
    h2sDst,
  );
  const msgScalars = messages.map((m) => hashToScalar(m, cat(apiId, text('MAP_MSG_TO_SCALAR_AS_HASH_'))));
  const p1 = G1.ProjectivePoint.fromHex(
    'a8ce256102840821a3e94ea9025e4662b205762f9776b3a766c872b948f1fd225e7c59698588e70d11406d161b4e28c9',
  );
  const bv = msgScalars.reduce((acc, m, i) => acc.add(gens[i + 1]!.multiply(m)), p1.add(gens[0]!.multiply(domain)));
  const t = 12345n;
  const s = 67890n;
  const d = bv.multiply(t);
  const t1 = d.multiply(s);
  const identity = G1.ProjectivePoint.ZERO.toRawBytes(true);
  const indexes = messages.map((_, i) => i);
  const c = hashToScalar(
    cat(
      int8(indexes.length),
      ...indexes.flatMap((i) => [int8(i), scalar(msgScalars[i]!)]),
      identity,
      identity,
      d.toRawBytes(true),
      t1.toRawBytes(true),
      identity,
      scalar(domain),
      int8(ph.length),
      ph,
    ),
    h2sDst,
  );
  const r3Hat = (((r - c) % r) * bls12_381.fields.Fr.inv(t)) % r;
  return {
    publicKey,
    proof: cat(identity, identity, d.toRawBytes(true), scalar(1n), scalar(s), scalar(r3Hat), scalar(c)),
    header,
    presentationHeader: ph,
    disclosedMessages: messages,
    disclosedMessageIndexes: indexes,
    ciphersuite: CIPHERSUITE,
  };
}

/** A canonical compressed encoding (x < p) of an x for which y² = x³ + 4 has no solution. */
function xNotOnCurve(): Uint8Array {
  const { Fp } = bls12_381.fields;
  for (let x = 1n; ; x++) {
    const y2 = Fp.add(Fp.pow(x, 3n), 4n);
    if (Fp.eql(Fp.pow(y2, (Fp.ORDER - 1n) / 2n), Fp.ONE)) continue; // a square: on the curve
    const encoded = Uint8Array.from(Buffer.from(x.toString(16).padStart(96, '0'), 'hex'));
    encoded[0]! |= 0x80;
    return encoded;
  }
}

/** The compressed encoding of a point on BLS12-381's G1 curve that is not in its r-order subgroup. */
function pointOutsideSubgroup(): Uint8Array {
  const { Fp } = bls12_381.fields;
  for (let x = 1n; ; x++) {
    const y2 = Fp.add(Fp.pow(x, 3n), 4n);
    let y: bigint;
    try {
      y = Fp.sqrt(y2);
    } catch {
      continue;
    }
    const point = new bls12_381.G1.ProjectivePoint(x, y, 1n);
    if (point.isTorsionFree()) continue;
    const encoded = new Uint8Array(48);
    encoded.set(Buffer.from(x.toString(16).padStart(96, '0'), 'hex'));
    encoded[0]! |= 0x80 | (y > Fp.neg(y) ? 0x20 : 0);
    return encoded;
  }
}
