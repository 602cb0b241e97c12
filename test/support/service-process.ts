import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * What follows `node` to start the service in a process of its own, as an operator does: by
 * default the TypeScript through tsx (`npm start`); with MATRICULA_TEST_COMPILED=1, the compiled
 * build (`npm run start:compiled`), which starts on about half the CPU (no loader thread, no
 * transforms). CI sets it once its build lane has written dist/ from the same tree. A dist/ older
 * than any file of src/ is refused with the command that fixes it, so that no test runs an old
 * build.
 *
 * Tests of the command line itself (`npm start`, its flags, bin/matricula) keep spawning what the
 * operator types; this is for tests of what the running service does.
 */
export function serviceArgs(...args: string[]): string[] {
  if (process.env.MATRICULA_TEST_COMPILED !== '1') return ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), ...args];
  assertBuildCurrent();
  return [join(ROOT, 'dist', 'main.js'), ...args];
}

let checked = false;

/** Throws unless dist/main.js exists and is newer than every file under src/. */
export function assertBuildCurrent(root = ROOT): void {
  if (checked && root === ROOT) return;
  const built = join(root, 'dist', 'main.js');
  let builtAt: number;
  try {
    builtAt = statSync(built).mtimeMs;
  } catch {
    throw new Error(`MATRICULA_TEST_COMPILED=1 but ${built} is missing: run npm run build`);
  }
  const newer = newestFile(join(root, 'src'));
  if (newer && newer.mtimeMs > builtAt)
    throw new Error(`MATRICULA_TEST_COMPILED=1 but ${newer.path} changed after dist/ was built: run npm run build`);
  if (root === ROOT) checked = true;
}

function newestFile(dir: string): { path: string; mtimeMs: number } | undefined {
  let newest: { path: string; mtimeMs: number } | undefined;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const found = entry.isDirectory() ? newestFile(path) : { path, mtimeMs: statSync(path).mtimeMs };
    if (found && (!newest || found.mtimeMs > newest.mtimeMs)) newest = found;
  }
  return newest;
}
