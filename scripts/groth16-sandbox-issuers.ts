/**
 * Writes the BabyJubJub public keys of the sandbox universities to
 * src/proofs/groth16/artifacts/sandbox-issuers.json. Run by scripts/groth16-build.sh.
 *
 * Deriving a public key from a private key takes circomlibjs (GPL, dev only); the service reads
 * the committed result instead, so it never loads GPL code.
 */
import { writeFileSync } from 'node:fs';
import { buildEddsa } from 'circomlibjs';
import { SANDBOX_UNIVERSITIES } from '../src/proofs/sandbox-universities.ts';
import { sandboxIssuerPrivateKey } from '../src/proofs/groth16/sandbox-issuers.ts';
import { GROTH16_ARTIFACTS } from '../src/proofs/groth16/artifacts.ts';

const eddsa = await buildEddsa();
const keys: Record<string, { x: string; y: string }> = {};
for (const university of SANDBOX_UNIVERSITIES) {
  const [x, y] = eddsa.prv2pub(sandboxIssuerPrivateKey(university));
  keys[university.domain] = { x: eddsa.F.toObject(x).toString(), y: eddsa.F.toObject(y).toString() };
}
writeFileSync(GROTH16_ARTIFACTS.sandboxIssuers, `${JSON.stringify(keys, null, 2)}\n`);
console.log(`wrote ${Object.keys(keys).length} sandbox issuer keys to ${GROTH16_ARTIFACTS.sandboxIssuers}`);
