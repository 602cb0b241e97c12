/**
 * Writes the BBS public keys of the sandbox universities to
 * src/proofs/bbs/artifacts/sandbox-public-keys.json:
 *
 *   node --import tsx scripts/bbs-sandbox-keys.ts
 *
 * Deriving them (a G2 multiplication each, after building the generator's table) takes about
 * 0.3 s of CPU, which every process start paid to seed the trust registry; the service reads
 * the committed result instead. test/proofs/proofs-bbs.test.ts derives them again and compares.
 */
import { writeFileSync } from 'node:fs';
import { deriveSandboxIssuerPublicKeys, SANDBOX_PUBLIC_KEYS_FILE } from '../src/proofs/bbs/keys.ts';

const keys = deriveSandboxIssuerPublicKeys();
writeFileSync(SANDBOX_PUBLIC_KEYS_FILE, `${JSON.stringify(keys, null, 2)}\n`);
console.log(`wrote ${Object.keys(keys).length} sandbox BBS public keys to ${SANDBOX_PUBLIC_KEYS_FILE}`);
