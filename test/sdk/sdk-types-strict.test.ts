import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';

/**
 * The SDK's generated types (packages/sdk/src/openapi.ts, from /openapi.json) are precise enough
 * for a strict TypeScript program to write the obvious code: a program compiled here with
 * `tsc --strict`. Each `@ts-expect-error` must be an error, so a type that widens back to
 * `string` (or loses a response) fails the compile ("Unused '@ts-expect-error' directive").
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PROGRAM = `
import { Matricula, MatriculaError, type components, type operations, type webhooks, type Session, type SessionResult, type VerificationResult } from '${ROOT}packages/sdk/src/index.js';

type Schemas = components['schemas'];
declare const client: Matricula;

export async function firstHour(appId: string): Promise<string> {
  // The secret of a new endpoint is a string: stored as is, no null check needed.
  const endpoint = await client.webhooks.create({ appId, url: 'https://shop.example/hooks', events: ['verification.completed'] });
  const secret: string = endpoint.secret;
  const rotated: string = (await client.webhooks.rotateSecret(endpoint.id)).secret;

  const session = await client.sessions.retrieve('sess_x');
  if (session.status === 'completed') {
    // The level is the catalogue's, not any string.
    const level: 'undergraduate' | 'postgraduate' | 'doctoral' | 'vocational' | null = session.result.claims.academic_level;
    void level;
  }
  const deliveries = await client.webhooks.deliveries.list(endpoint.id).toArray(1);
  for (const delivery of deliveries)
    for (const attempt of delivery.attempts) if (attempt.outcome === 'ssrf_refused') return 'fix the URL';
  try {
    await client.sessions.cancel('sess_x');
  } catch (error) {
    if (error instanceof MatriculaError && error.reason === 'forbidden_address') return 'a private address';
  }
  return secret + rotated;
}

// verified: true implies a university (unless the session was redacted); false implies a reason.
export function universityOf(session: Session): string | null {
  if (session.status === 'completed' && !session.redacted && session.result.verified)
    return session.result.university.domain;
  return null;
}
export function directOutcome(result: VerificationResult): string {
  if (!result.verified) return result.failureReason;
  return result.university.name;
}
// @ts-expect-error a result not narrowed by verified may have no university
export const unnarrowed = (result: SessionResult): string => result.university.domain;
export function redactedUniversity(session: Session): string | null {
  // @ts-expect-error a redacted session's result has its university erased
  if (session.status === 'completed' && session.result.verified) return session.result.university.domain;
  return null;
}

// @ts-expect-error not an academic level of the catalogue
export const bachelor: Schemas['AcademicLevel'] = 'bachelor';
// @ts-expect-error outcomes are a closed list
export const outcome: Schemas['AttemptOutcome'] = 'exploded';
// @ts-expect-error reasons are a closed list
export const reason: Schemas['ErrorReason'] = 'because';
// @ts-expect-error the secret of a created endpoint is never null in the type
export const nullSecret: Schemas['WebhookEndpointWithSecret']['secret'] = null;

// Every operation can answer 503 (shutting down, database unreachable).
export type Unavailable = operations['createSession']['responses'][503]['content']['application/json'];
export type UnavailableRead = operations['retrieveSession']['responses'][503];
// The webhooks section declares the Standard Webhooks headers of a delivery.
type Delivered = NonNullable<webhooks['verification.completed']['post']>['parameters']['header'];
export const headers: Pick<Delivered, 'webhook-id' | 'webhook-timestamp' | 'webhook-signature' | 'X-Service-Signature'> = {
  'webhook-id': 'evt_x',
  'webhook-timestamp': '1795663541',
  'webhook-signature': 'v1,abc',
  'X-Service-Signature': 't=1795663541,v1=abc',
};
`;

describe('the generated SDK types', () => {
  const dir = mkdtempSync(join(tmpdir(), 'matricula-sdk-strict-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a strict TypeScript program compiles against the generated SDK types', () => {
    writeFileSync(join(dir, 'program.ts'), PROGRAM);
    const tsc = spawnSync(
      process.execPath,
      [
        join(ROOT, 'node_modules/typescript/bin/tsc'),
        '--strict',
        '--noEmit',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        '--skipLibCheck',
        '--types',
        'node',
        '--typeRoots',
        join(ROOT, 'node_modules/@types'),
        join(dir, 'program.ts'),
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    assert.equal(tsc.status, 0, `tsc --strict failed:\n${tsc.stdout}${tsc.stderr}`);
  });
});
