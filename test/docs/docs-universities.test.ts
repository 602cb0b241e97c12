import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { Base8, mulPointEscalar } from '@zk-kit/baby-jubjub';
import { ACADEMIC_LEVELS } from '../../src/domain/claims.ts';
import { encodeBbsPublicKey, sandboxIssuerKeyPair as bbsKeyPair } from '../../src/proofs/bbs/index.ts';
import { BBS_STUDENT_CREDENTIAL } from '../../src/proofs/bbs/credential.ts';
import { BN254_R, domainHash, nonceField } from '../../src/proofs/groth16/fields.ts';
import { MAX_NOW_AHEAD_SECONDS, MAX_NOW_BEHIND_SECONDS } from '../../src/proofs/freshness.ts';
import { sandboxIssuers, validateIssuerInput } from '../../src/proofs/issuer-definitions.ts';
import { STUDENT_CREDENTIAL_VCT } from '../../src/proofs/sd-jwt-vc/credential.ts';
import { sandboxIssuerKeyPair as jwkKeyPair } from '../../src/proofs/sd-jwt-vc/index.ts';
import { MAX_KEY_BINDING_AGE_SECONDS, MAX_KEY_BINDING_FUTURE_SECONDS } from '../../src/proofs/sd-jwt-vc/key-binding.ts';

/** docs/universities.md restates rules the code enforces; these checks keep the two from drifting. */
const doc = await readFile(new URL('../../docs/universities.md', import.meta.url), 'utf8');

const hashMod = (text: string) => BigInt(`0x${createHash('sha256').update(text, 'utf8').digest('hex')}`) % BN254_R;

test('the issuer file example validates once its placeholders are real keys', () => {
  const example = JSON.parse(/```json\n([^]*?)```/.exec(doc)![1]!) as Record<string, unknown>;
  const sandbox = sandboxIssuers()[0]!;
  // Keys of its own: a live university may not reuse the published sandbox keys.
  const point = mulPointEscalar(Base8, 123456789n);
  const keys = {
    sdJwtVc: jwkKeyPair('docs-universities', 'EdDSA').publicJwk,
    bbs: encodeBbsPublicKey(bbsKeyPair('docs-universities').publicKey),
    babyJubJub: { x: String(point[0]), y: String(point[1]) },
  };
  const checked = validateIssuerInput({ ...example, keys });
  assert.ok(checked.ok, JSON.stringify(checked));
  assert.deepEqual(Object.keys(example.keys as object).sort(), Object.keys(sandbox.keys).sort());
});

test('SD-JWT VC: vct, key-binding window', () => {
  assert.match(doc, new RegExp(`exactly \`${STUDENT_CREDENTIAL_VCT}\``));
  assert.match(
    doc,
    new RegExp(`within ${MAX_KEY_BINDING_AGE_SECONDS} s before and ${MAX_KEY_BINDING_FUTURE_SECONDS} s after`),
  );
});

test('BBS: message order and signature header', () => {
  const order = BBS_STUDENT_CREDENTIAL.messages.map((name, i) => `${i} \`${name}=`).join('[^\n]*');
  assert.match(doc, new RegExp(order));
  assert.ok(doc.includes(`\`${BBS_STUDENT_CREDENTIAL.type}\\|<domain>\``));
});

test('Groth16: the documented hashes and codes are the ones the circuit inputs use', () => {
  assert.ok(doc.includes('SHA-256(UTF-8 `matricula-domain-v1|<domain>`)'));
  assert.equal(hashMod('matricula-domain-v1|pruebas.example'), domainHash('pruebas.example'));
  assert.ok(doc.includes('SHA-256(`LP(matricula-groth16-nonce-v2, <BASE_URL>, <nonce>)`) mod r'));
  const lp = (...fields: string[]) =>
    Buffer.concat(
      fields.flatMap((f) => {
        const bytes = Buffer.from(f, 'utf8');
        const length = Buffer.alloc(4);
        length.writeUInt32BE(bytes.length);
        return [length, bytes];
      }),
    );
  const digestMod = (bytes: Buffer) => BigInt(`0x${createHash('sha256').update(bytes).digest('hex')}`) % BN254_R;
  assert.equal(
    digestMod(lp('matricula-groth16-nonce-v2', 'https://a.example', 'nonce_x')),
    nonceField('nonce_x', 'https://a.example'),
  );
  // Finding 2: moving a byte between audience and nonce gives another field element.
  assert.notEqual(nonceField('x|nonce_x', 'https://a.example'), nonceField('nonce_x', 'https://a.example|x'));
  for (const [level, code] of Object.entries(ACADEMIC_LEVELS)) assert.ok(doc.includes(`${code} ${level}`), level);
  assert.ok(doc.includes(`at most ${MAX_NOW_BEHIND_SECONDS} s behind and ${MAX_NOW_AHEAD_SECONDS} s ahead`));
});
