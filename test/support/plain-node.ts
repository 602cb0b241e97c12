import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/**
 * A project directory as an integrator has it: `node_modules/@matricula/sdk` (the SDK compiled by
 * its own tsconfig, with its package.json) and `node_modules/matricula` (the service's
 * package.json, with the SDK's compiled files where its "exports" point, as `npm run build`
 * leaves them). Nothing of tsx, nothing of the repository on the resolution path: scripts run in
 * `dir` with plain `node` resolve `@matricula/sdk` and `matricula/webhooks` through the packages'
 * "exports" and get JavaScript.
 */
export interface PlainNodeProject {
  dir: string;
  remove(): void;
}

export function plainNodeProject(): PlainNodeProject {
  const dir = mkdtempSync(join(tmpdir(), 'matricula-plain-node-'));
  try {
    const sdk = join(dir, 'node_modules', '@matricula', 'sdk');
    mkdirSync(sdk, { recursive: true });
    execFileSync(process.execPath, [
      join(repoRoot, 'node_modules/typescript/bin/tsc'),
      '-p',
      join(repoRoot, 'packages/sdk'),
      '--outDir',
      join(sdk, 'dist'),
    ]);
    cpSync(join(repoRoot, 'packages/sdk/package.json'), join(sdk, 'package.json'));
    const service = join(dir, 'node_modules', 'matricula');
    mkdirSync(join(service, 'packages', 'sdk'), { recursive: true });
    cpSync(join(repoRoot, 'package.json'), join(service, 'package.json'));
    cpSync(join(sdk, 'dist'), join(service, 'packages', 'sdk', 'dist'), { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'integrator', private: true, type: 'module' }));
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The root package.json's "exports" and "bin". */
export function rootPackage(): { exports: unknown; bin: Record<string, string>; scripts: Record<string, string> } {
  return JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as ReturnType<typeof rootPackage>;
}
