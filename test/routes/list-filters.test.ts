import assert from 'node:assert/strict';
import { test } from 'node:test';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { createSession } from '../support/sessions.ts';

/**
 * `GET /verification/v1/sessions?status=expired` is the one filter with two kinds of rows: sessions
 * the sweeper marked expired, and open ones past their deadline it has not reached yet. Since
 * issue 30 each kind is read through its own index in id order and the two are merged; paging by
 * cursor must still give every one of them once, newest first.
 */
forEachDialect('sessions list: the expired filter across pages', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  test('stored and lapsed expired sessions, interleaved, page by page in id order', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) {
      ids.push((await createSession(h, tenant, { expiresInSeconds: 60 })).sessionId);
      h.clock.advance(1);
    }
    // Every third stays open (lapsed once the clock passes its deadline), every third is stored
    // expired, every third completed (not listed).
    const stored = ids.filter((_, i) => i % 3 === 1);
    const completed = ids.filter((_, i) => i % 3 === 2);
    await h.store.db.updateTable('sessions').set({ status: 'expired' }).where('id', 'in', stored).execute();
    await h.store.db.updateTable('sessions').set({ status: 'completed' }).where('id', 'in', completed).execute();
    h.clock.advance(61_000);

    const seen: string[] = [];
    let cursor = null as string | null;
    for (let page = 0; page < 10; page++) {
      const res = await h.app.inject({
        method: 'GET',
        url: `/verification/v1/sessions?status=expired&limit=2${cursor ? `&startingAfter=${cursor}` : ''}`,
        headers: tenant.auth,
      });
      assert.equal(res.statusCode, 200);
      const body = res.json() as {
        data: Array<{ sessionId: string; status: string }>;
        pagination: { hasMore: boolean; nextCursor: string | null };
      };
      seen.push(...body.data.map((s) => s.sessionId));
      assert.ok(body.data.every((s) => s.status === 'expired'));
      cursor = body.pagination.nextCursor;
      if (!body.pagination.hasMore) break;
    }
    const expected = ids.filter((_, i) => i % 3 !== 2).reverse();
    assert.deepEqual(seen, expected);
  });
});
