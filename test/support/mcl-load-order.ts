/**
 * Run as its own process (`node --import tsx test/support/mcl-load-order.ts bbs-first|groth16-first`):
 * loads the BBS verifier's mcl-wasm instance and the Groth16 verifier's shared one in the order
 * given, in a fresh module cache, and prints one JSON line of what each verifier then does.
 */
import { readFileSync } from 'node:fs';

const order = process.argv[2];
if (order !== 'bbs-first' && order !== 'groth16-first') throw new Error('usage: bbs-first | groth16-first');

const bytes = (hex: string) => Uint8Array.from(Buffer.from(hex, 'hex'));
const fixture = (
  JSON.parse(readFileSync(new URL('../fixtures/bbs-cfrg/bls12-381-sha-256-proofs.json', import.meta.url), 'utf8')) as {
    proofVerify: Array<Record<string, unknown> & { valid: boolean }>;
  }
).proofVerify.find((f) => f.valid)!;

async function bbs(): Promise<boolean> {
  const { verifyBbsProofMcl } = await import('../../src/proofs/bbs/mcl-verifier.ts');
  return verifyBbsProofMcl({
    publicKey: bytes(fixture.publicKey as string),
    proof: bytes(fixture.proof as string),
    header: bytes(fixture.header as string),
    presentationHeader: bytes(fixture.presentationHeader as string),
    disclosedMessages: (fixture.disclosedMessages as string[]).map(bytes),
    disclosedMessageIndexes: fixture.disclosedMessageIndexes as number[],
    ciphersuite: 'BLS12-381-SHA-256',
  });
}

async function groth16(): Promise<string> {
  const { initMcl } = await import('../../src/proofs/groth16/mcl-verifier.ts');
  const imported = (await import('mcl-wasm')) as typeof import('mcl-wasm') & { default?: typeof import('mcl-wasm') };
  const mcl = imported.default ?? imported;
  try {
    await initMcl();
  } catch (error) {
    return `initMcl threw: ${(error as Error).message}`;
  }
  const point = new mcl.G1();
  point.setStr('1 1 2', 10); // the BN254 generator
  return mcl.curveType === mcl.BN_SNARK1 && point.isValid() ? 'BN_SNARK1' : `curve ${mcl.curveType}`;
}

const result: Record<string, unknown> = {};
if (order === 'bbs-first') {
  result.bbs = await bbs();
  result.groth16 = await groth16();
} else {
  result.groth16 = await groth16();
  result.bbs = await bbs();
}
result.bbsAgain = await bbs();
console.log(JSON.stringify(result));
