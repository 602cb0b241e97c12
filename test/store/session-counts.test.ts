import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { effectiveStatus, type SessionStatus } from '../../src/domain/session-state.ts';
import { applyEventRetention } from '../../src/services/event-retention.ts';
import { expireDueSessions } from '../../src/services/expiry.ts';
import { applyResultRetention } from '../../src/services/redaction.ts';
import { applicationMetrics, type ApplicationMetrics } from '../../src/store/metrics.ts';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Migrator } from 'kysely';
import { TestClock } from '../../src/domain/clock.ts';
import { newId } from '../../src/domain/ids.ts';
import type { Session } from '../../src/domain/session.ts';
import { createOrganization } from '../../src/services/organizations.ts';
import { migrate, openStore, type Store } from '../../src/store/db.ts';
import { MIGRATIONS } from '../../src/store/migrations/index.ts';
import { insertSessions } from '../../src/store/sessions.ts';
import {
  besideOtherFiles,
  migratingOnline,
  underSchemaLock,
  forEachDialect,
  useHarness,
  type DialectName,
  type Harness,
  type Tenant,
} from '../support/harness.ts';
import { buildPresentation, consent, createSession, submit, type CreatedSession } from '../support/sessions.ts';

/**
 * Issue 28: an application's counts come from session_counts (migration 0021), kept by triggers in
 * the transaction of each change. Every step of a session's life, and of its data's retention,
 * is checked twice: against the counts the test expects, and against a count of the whole
 * `sessions` table (what the application page read before), so a change that moves a session
 * without its counter fails here.
 */
type Counts = ApplicationMetrics['sessions'];

const ZERO: Counts = {
  total: 0,
  pending: 0,
  consented: 0,
  verified: 0,
  notVerified: 0,
  expired: 0,
  cancelled: 0,
  declined: 0,
};

/** The counts of the application's sessions, each read as the API reads it: the oracle. */
async function countedFromSessions(h: Harness, appId: string): Promise<Counts> {
  const rows = await h.store.db
    .selectFrom('sessions')
    .select(['status', 'expires_at', 'verified'])
    .where('app_id', '=', appId)
    .execute();
  const counts = { ...ZERO };
  for (const row of rows) {
    counts.total++;
    const status: SessionStatus = effectiveStatus(row.status, row.expires_at, h.clock.now());
    if (status === 'completed') counts[Number(row.verified) === 1 ? 'verified' : 'notVerified']++;
    else counts[status]++;
  }
  return counts;
}

forEachDialect('application session counts', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(
    dialect,
    (ready, readyTenant) => {
      h = ready;
      tenant = readyTenant;
    },
    { RESULT_RETENTION_DAYS: '2', EVENT_RETENTION_DAYS: '3' },
  );

  async function expectCounts(expected: Partial<Counts>, step: string): Promise<void> {
    const want = { ...ZERO, ...expected };
    want.total = Object.entries(want).reduce((n, [k, v]) => (k === 'total' ? n : n + v), 0);
    const read = await applicationMetrics(h.store.db, tenant.appId, h.clock.now());
    assert.deepEqual(read.sessions, want, `${step}: counts from the aggregate`);
    assert.deepEqual(await countedFromSessions(h, tenant.appId), want, `${step}: counts of the sessions table`);
    const api = await h.app.inject({ method: 'GET', url: `/org/v1/apps/${tenant.appId}`, headers: tenant.auth });
    assert.equal(api.statusCode, 200);
    assert.deepEqual(api.json().data.metrics.sessions, want, `${step}: the API's application details`);
  }

  async function complete(session: CreatedSession, active: boolean): Promise<void> {
    const presentation = await buildPresentation(h, 'sd-jwt-vc', {
      nonce: session.challengeNonce,
      student: { active },
    });
    const res = await submit(h, session, 'sd-jwt-vc', presentation);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().data.verified, active);
  }

  let s: CreatedSession[] = [];
  before(async () => {
    s = [];
  });

  test('counts follow create, consent, decline, complete and cancel', async () => {
    await expectCounts({}, 'no session');
    for (let i = 0; i < 6; i++) s.push(await createSession(h, tenant));
    await expectCounts({ pending: 6 }, 'created');
    for (const session of s.slice(0, 3)) assert.equal((await consent(h, session)).statusCode, 200);
    assert.equal((await consent(h, s[3], 'declined')).statusCode, 200);
    await expectCounts({ pending: 2, consented: 3, declined: 1 }, 'consented');
    await complete(s[0], true);
    await complete(s[1], false);
    await expectCounts({ pending: 2, consented: 1, verified: 1, notVerified: 1, declined: 1 }, 'completed');
    const cancel = await h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${s[4].sessionId}/cancel`,
      headers: tenant.auth,
    });
    assert.equal(cancel.statusCode, 200, cancel.body);
    await expectCounts({ pending: 1, consented: 1, verified: 1, notVerified: 1, declined: 1, cancelled: 1 }, 'cancel');
  });

  test('an open session past its expiry counts as expired before and after the sweeper', async () => {
    h.clock.advance(16 * 60 * 1000);
    const after = { verified: 1, notVerified: 1, declined: 1, cancelled: 1, expired: 2 };
    await expectCounts(after, 'lapsed, not yet swept');
    assert.equal(await expireDueSessions(h.services), 2);
    await expectCounts(after, 'swept');
  });

  test('redaction, result retention and event retention move no count', async () => {
    const redact = await h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${s[0].sessionId}/redact`,
      headers: tenant.auth,
    });
    assert.equal(redact.statusCode, 200, redact.body);
    const after = { verified: 1, notVerified: 1, declined: 1, cancelled: 1, expired: 2 };
    await expectCounts(after, 'redacted');
    h.clock.advance(4 * 24 * 60 * 60 * 1000);
    assert.ok((await applyResultRetention(h.services)).sessions >= 5);
    assert.ok((await applyEventRetention(h.services)) > 0);
    await expectCounts(after, 'after retention');
  });

  test('a deleted session leaves the counts, and other applications are not counted', async () => {
    const other = await h.bootstrap('sandbox');
    await createSession(h, other);
    await h.store.db.deleteFrom('sessions').where('id', '=', s[1].sessionId).execute();
    await expectCounts({ verified: 1, declined: 1, cancelled: 1, expired: 2 }, 'deleted');
    const read = await applicationMetrics(h.store.db, other.appId, h.clock.now());
    assert.deepEqual(read.sessions, { ...ZERO, total: 1, pending: 1 });
  });

  test('a batch of sessions created together is counted once each', async () => {
    const created = await Promise.all(Array.from({ length: 40 }, () => createSession(h, tenant)));
    assert.equal(created.length, 40);
    await expectCounts({ pending: 40, verified: 1, declined: 1, cancelled: 1, expired: 2 }, 'concurrent creates');
  });
});

/** A store migrated only up to `last`, and how to drop it. */
async function storeMigratedTo(
  dialect: DialectName,
  last: string,
): Promise<{ store: Store; drop: () => Promise<void>; schema: string }> {
  let store: Store;
  let drop: () => Promise<void>;
  let schema = '';
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'matricula-counts-'));
    store = await openStore(`sqlite:${join(dir, 'test.sqlite')}`);
    drop = async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    };
  } else {
    schema = `t_${randomBytes(6).toString('hex')}`;
    store = await openStore(process.env.TEST_DATABASE_URL!, { schema, poolSize: 2 });
    drop = async () => {
      await store.close();
      await underSchemaLock((client) => client.query(`drop schema if exists ${schema} cascade`));
    };
  }
  const migrator = new Migrator({
    db: store.db,
    provider: { getMigrations: async () => MIGRATIONS },
    ...(store.schema ? { migrationTableSchema: store.schema } : {}),
  });
  await besideOtherFiles(schema, async () => {
    const { error } = await migrator.migrateTo(last);
    if (error) throw error instanceof Error ? error : new Error(`migrating to ${last} failed`, { cause: error });
  });
  return { store, drop, schema };
}

forEachDialect('application session counts of a database migrated with sessions in it', (dialect) => {
  test('migration 0021 counts the sessions already there', async () => {
    const { store, drop, schema } = await storeMigratedTo(dialect, '0015_credential_profiles');
    try {
      const clock = new TestClock();
      const created = await createOrganization({ db: store.db, clock }, { name: 'Before', environment: 'sandbox' });
      const statuses = ['pending', 'consented', 'completed', 'completed', 'expired', 'declined', 'cancelled'] as const;
      const sessions: Session[] = statuses.map((status, i) => {
        const id = newId('session', clock);
        const at = clock.now().toISOString();
        return {
          id,
          appId: created.application.id,
          orgId: created.organization.id,
          environment: 'sandbox',
          status,
          challengeNonce: `nonce_${i}`,
          purpose: 'Before the counts',
          requiredClaims: ['is_active_student'],
          metadata: null,
          clientReference: null,
          failedAttempts: 0,
          result: null,
          expiresAt: new Date(clock.now().getTime() + 300_000).toISOString(),
          createdAt: at,
          updatedAt: at,
          consentedAt: null,
          completedAt: null,
          redactedAt: null,
          returnUrl: null,
        };
      });
      await insertSessions(store.db, sessions);
      await store.db.updateTable('sessions').set({ verified: 1 }).where('id', '=', sessions[2]!.id).execute();
      await store.db.updateTable('sessions').set({ verified: 0 }).where('id', '=', sessions[3]!.id).execute();
      await migratingOnline(schema, () => migrate(store));
      const read = await applicationMetrics(store.db, created.application.id, clock.now());
      assert.deepEqual(read.sessions, {
        total: 7,
        pending: 1,
        consented: 1,
        verified: 1,
        notVerified: 1,
        expired: 1,
        cancelled: 1,
        declined: 1,
      });
    } finally {
      await drop();
    }
  });
});
