/**
 * Writes test/fixtures/bbs-cfrg/bls12-381-sha-256-proofs.json: the ProofVerify fixtures of the
 * IRTF CFRG BBS draft for the BLS12-381-SHA-256 ciphersuite, as digitalbazaar/bbs-signatures
 * (BSD-3-Clause) carries them in test/fixtures/bbs-sha256.js, in plain JSON (hex strings), so
 * that the tests need neither that repository nor its test files.
 *
 *   node scripts/bbs-cfrg-fixtures.mjs PATH/TO/bbs-signatures-checkout [COMMIT]
 *
 * The checkout's test/fixtures import its lib/ (for the ciphersuite objects): it must be a full
 * working tree with @noble/curves resolvable (a directory inside this repository will do).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [checkout, commit = 'unknown'] = process.argv.slice(2);
if (!checkout) {
  console.error('usage: node scripts/bbs-cfrg-fixtures.mjs PATH/TO/bbs-signatures-checkout [COMMIT]');
  process.exit(2);
}
const module = await import(pathToFileURL(path.resolve(checkout, 'test/fixtures/bbs-sha256.js')).href);
const toHex = (bytes) => Buffer.from(bytes).toString('hex');
const fixtures = module.BLS12381_SHA256.fixtures;
const proofVerify = fixtures
  .filter((f) => f.operation === 'ProofVerify')
  .map(({ name, parameters: p, output }) => ({
    name,
    publicKey: toHex(p.PK),
    proof: toHex(p.proof),
    header: toHex(p.header),
    presentationHeader: toHex(p.ph),
    disclosedMessages: p.disclosed_messages.map(toHex),
    disclosedMessageIndexes: p.disclosed_indexes,
    valid: output,
  }));
const out = {
  source: `github.com/digitalbazaar/bbs-signatures test/fixtures/bbs-sha256.js at ${commit} (BSD-3-Clause), the CFRG draft's fixtures`,
  ciphersuite: 'BLS12-381-SHA-256',
  proofVerify,
};
const target = new URL('../test/fixtures/bbs-cfrg/bls12-381-sha-256-proofs.json', import.meta.url);
writeFileSync(target, `${JSON.stringify(out, null, 2)}\n`);
console.log(`${proofVerify.length} ProofVerify fixtures written to ${target.pathname}`);
