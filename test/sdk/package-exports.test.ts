import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { plainNodeProject, rootPackage, type PlainNodeProject } from '../support/plain-node.ts';

const root = new URL('../../', import.meta.url);
const pkg = rootPackage();

/** Every target path of an `exports` map, through conditions and subpaths alike. */
function targets(entry: unknown): string[] {
  if (typeof entry === 'string') return [entry];
  if (entry === null || typeof entry !== 'object') return [];
  return Object.values(entry).flatMap(targets);
}

describe('the package exports under plain node', () => {
  let project: PlainNodeProject;
  before(() => {
    project = plainNodeProject();
  });
  after(() => project?.remove());

  test('every bin exists, and every export is JavaScript or types that `npm run build` produces', () => {
    for (const path of Object.values(pkg.bin)) assert.ok(existsSync(new URL(path, root)), `${path} is missing`);
    const paths = targets(pkg.exports);
    assert.ok(paths.length > 0);
    for (const path of paths) {
      // No TypeScript source: plain node refuses it (ERR_UNKNOWN_FILE_EXTENSION).
      assert.match(path, /\.(d\.ts|js)$/, `${path}: exports must name compiled files`);
      assert.match(path, /^\.\/packages\/sdk\/dist\//, `${path}: the compiled SDK is what npm run build adds`);
      assert.ok(existsSync(join(project.dir, 'node_modules/matricula', path)), `${path} is not produced by the build`);
    }
    // sdk:pack builds the SDK (its prepack script) and writes the tarball integrators install.
    assert.match(pkg.scripts.build, /npm run sdk:pack/, 'npm run build builds the SDK that the exports name');
  });

  test('matricula/webhooks and @matricula/sdk import under plain node, and are the same verifier', () => {
    const script = `
    import * as legacy from 'matricula/webhooks';
    import * as receiver from '@matricula/sdk/webhooks';
    import { Matricula, constructEvent } from '@matricula/sdk';
    console.log(JSON.stringify({
      legacy: typeof legacy.verifyWebhookSignature,
      same: legacy.verifyWebhookSignature.toString() === receiver.verifyWebhookSignature.toString(),
      static: Matricula.webhooks.verify === constructEvent,
      outcome: legacy.verifyWebhookSignature('{}', { 'webhook-signature': 'v1,x' }, 'whsec_abc').reason,
    }));`;
    // Plain node, no tsx, no loader, run from the integrator's project.
    const printed = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: project.dir,
      encoding: 'utf8',
    });
    assert.deepEqual(JSON.parse(printed), {
      legacy: 'function',
      same: true,
      static: true,
      outcome: 'missing_webhook_id',
    });
  });
});
