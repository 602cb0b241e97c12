// `npm run build`, after tsc: the files the compiled service reads beside its modules (located
// with import.meta.url), copied from src/ to dist/ at the same relative paths.
import { cpSync, rmSync } from 'node:fs';

const ASSETS = [
  'portal/assets',
  'proofs/groth16/artifacts',
  'proofs/bbs/artifacts',
  // The SQLite checkpoint thread's module: plain JavaScript, run as it is from sources and dist/.
  'store/sqlite-checkpoint-thread.mjs',
];
for (const path of ASSETS) {
  rmSync(`dist/${path}`, { recursive: true, force: true });
  cpSync(`src/${path}`, `dist/${path}`, { recursive: true });
}
