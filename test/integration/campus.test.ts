import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../../src/config.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { buildPresentation, createSession, type CreatedSession } from '../support/sessions.ts';

/**
 * A campus behind one address (issue 24, item 3): 200 students on a campus network (or behind a
 * carrier's NAT), each with the portal page open and their wallet answering within their minute,
 * at the default rate limits. Every request a student's page and wallet send comes from the one
 * address. Time moves only with the test clock, in steps of 250 ms.
 *
 * The page is followed as verify.js does it: one status request at a time, asking the server to
 * wait for a change (`wait`, `seen`), never two requests less than 1.5 s apart, and backing off
 * after a failure (3 s, 6 s, … 15 s). Against a server that answers at once, that is the polling
 * page of before (a request every 1.5 s). The wallet asks for the request, consents and presents;
 * refused with a 429, it tries again after Retry-After, as long as the student's minute lasts.
 */

const CAMPUS = '198.51.100.20';
const FLOOD = '203.0.113.66';
const STUDENTS = 200;
const TICK_MS = 250;
const POLL_MS = 1500;
const WAIT_SECONDS = 25;
const MINUTE = 60_000;

/** The defaults, set explicitly: the harness turns every limit off unless a suite sets it. */
function defaultLimits(): Record<string, string> {
  const defaults = loadConfig({}).rateLimits;
  return {
    RATE_LIMIT_PUBLIC_PER_MINUTE: String(defaults.publicPerMinute),
    RATE_LIMIT_HEAVY_PER_MINUTE: String(defaults.heavyPerMinute),
    RATE_LIMIT_API_KEY_PER_MINUTE: String(defaults.apiKeyPerMinute),
  };
}

interface Student {
  session: CreatedSession;
  opensAt: number;
  answersAt: number;
  /** When the page showed the final panel, and which. */
  pageDoneAt?: number;
  pagePanel?: string;
  walletVerified?: boolean;
  refused: number;
}

forEachDialect('a campus behind one address', (dialect) => {
  let h: Harness;
  let shop: Tenant;
  let neighbour: Tenant;
  before(async () => {
    h = await startHarness(dialect, defaultLimits());
    shop = await h.bootstrap('sandbox');
    neighbour = await h.bootstrap('sandbox');
  });
  after(() => h.close());

  /** Resolves when the test clock reaches `ms` from now. */
  const later = (ms: number) => new Promise<void>((resolve) => h.clock.setTimeout(resolve, ms));
  const now = () => h.clock.now().getTime();
  // Page loops with a status request in flight: parked in the server's wait, or about to answer.
  let pagesAsking = 0;

  /** verify.js, as far as the server can tell. */
  async function followPage(student: Student): Promise<void> {
    const { session } = student;
    const page = await h.app.inject({ url: `/verify/${session.sessionId}`, remoteAddress: CAMPUS });
    if (page.statusCode !== 200) {
      student.refused += 1;
      return;
    }
    // The page's own assets, as its links name them (a browser fetches each once).
    for (const [asset] of page.body.matchAll(/\/assets\/[a-z.-]+\?v=[\w-]+/g)) {
      const res = await h.app.inject({ url: asset, remoteAddress: CAMPUS });
      if (res.statusCode !== 200) student.refused += 1;
    }
    let current = /data-current="(\w+)"/.exec(page.body)![1];
    let failures = 0;
    while (now() < student.opensAt + 2 * MINUTE) {
      const startedAt = now();
      pagesAsking += 1;
      let res: LightMyRequestResponse;
      try {
        res = await h.app.inject({
          url: `/verification/v1/sessions/${session.sessionId}/status?wait=${WAIT_SECONDS}&seen=${current}`,
          remoteAddress: CAMPUS,
        });
      } finally {
        pagesAsking -= 1;
      }
      if (res.statusCode === 200) {
        failures = 0;
        const data = res.json().data;
        current = data.status === 'completed' ? (data.verified ? 'verified' : 'not_verified') : data.status;
        if (!['pending', 'consented'].includes(current)) {
          student.pageDoneAt = now();
          student.pagePanel = current;
          return;
        }
      } else {
        student.refused += 1;
        failures += 1;
      }
      const gap = failures ? Math.min(POLL_MS * 2 ** failures, 15_000) : Math.max(0, POLL_MS - (now() - startedAt));
      if (gap > 0) await later(gap);
    }
  }

  // Wallets at work (not those waiting on the clock for Retry-After).
  let walletsBusy = 0;

  /** The student's wallet: retries a refused call after Retry-After while the minute lasts. */
  async function answer(student: Student): Promise<void> {
    const { session } = student;
    const call = async (send: () => Promise<LightMyRequestResponse>): Promise<LightMyRequestResponse | undefined> => {
      for (;;) {
        const res = await send();
        if (res.statusCode !== 429) return res;
        student.refused += 1;
        const retryAt = now() + Number(res.headers['retry-after']) * 1000;
        if (retryAt > student.opensAt + MINUTE) return undefined;
        walletsBusy -= 1;
        await later(retryAt - now());
        walletsBusy += 1;
      }
    };
    const base = `/verification/v1/sessions/${session.sessionId}`;
    const request = await call(() =>
      h.app.inject({ url: `${base}/request?nonce=${session.challengeNonce}`, remoteAddress: CAMPUS }),
    );
    if (request?.statusCode !== 200) return;
    const consented = await call(() =>
      h.app.inject({
        method: 'POST',
        url: `${base}/consent`,
        remoteAddress: CAMPUS,
        payload: { nonce: session.challengeNonce, decision: 'approved' },
      }),
    );
    if (consented?.statusCode !== 200) return;
    const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce: session.challengeNonce });
    const presented = await call(() =>
      h.app.inject({
        method: 'POST',
        url: `${base}/presentation`,
        remoteAddress: CAMPUS,
        payload: { nonce: session.challengeNonce, format: 'sd-jwt-vc', presentation },
      }),
    );
    student.walletVerified = presented?.statusCode === 200 && presented.json().data.verified === true;
  }

  /**
   * Lets every request started so far run until it answers or waits in the server (a long poll)
   * and every page or wallet waits on the test clock. Yields to the event loop (database I/O
   * included); no time passes.
   */
  async function settle(running: Set<Promise<void>>, parked: () => number): Promise<void> {
    for (let turns = 0; turns < 200_000; turns++) {
      await new Promise((resolve) => setImmediate(resolve));
      if (pagesAsking === parked() && walletsBusy === 0) return;
    }
    assert.fail(`requests still running: ${pagesAsking} page, ${walletsBusy} wallet, ${running.size} tasks`);
  }

  test('≥ 195 of 200 students complete within their minute; a flood from one address is refused', async (t) => {
    const start = now();
    const students: Student[] = [];
    for (let i = 0; i < STUDENTS; i++) {
      const session = await createSession(h, shop, { expiresInSeconds: 300 });
      // Pages open over the first minute; each student answers 10 to 29 s after opening theirs.
      const opensAt = start + Math.floor((i * MINUTE) / STUDENTS);
      students.push({ session, opensAt, answersAt: opensAt + 10_000 + (i % 20) * 1000, refused: 0 });
    }
    // The long polls this server holds open (none on a server that answers at once).
    const parked = () => h.services.sessionWatch?.open ?? 0;
    const running = new Set<Promise<void>>();
    const track = (work: Promise<void>) => {
      running.add(work);
      void work.finally(() => running.delete(work));
    };
    let floodRefused = 0;
    let floodSent = 0;
    let neighbourRefused = 0;

    for (let t = start; t <= start + 2 * MINUTE + 30_000; t += TICK_MS) {
      for (const student of students) {
        if (student.opensAt > t - TICK_MS && student.opensAt <= t) track(followPage(student));
        if (student.answersAt > t - TICK_MS && student.answersAt <= t) {
          walletsBusy += 1;
          track(
            answer(student).finally(() => {
              walletsBusy -= 1;
            }),
          );
        }
      }
      // A flood from another single address during the first minute: unknown sessions, wrong
      // nonces, unknown paths, 10 every 250 ms (2,400 a minute).
      if (t < start + MINUTE) {
        for (let j = 0; j < 10; j++) {
          const target = students[(t + j) % STUDENTS]!.session;
          const junk = [
            { url: `/verification/v1/sessions/sess_00000000000000000000000000/status` },
            {
              method: 'POST' as const,
              url: `/verification/v1/sessions/${target.sessionId}/consent`,
              payload: { nonce: 'nonce_guess', decision: 'approved' },
            },
            { url: `/verification/v1/sessions/${target.sessionId}/request?nonce=nonce_guess` },
            { url: '/wp-login.php' },
          ][j % 4]!;
          const res = await h.app.inject({ ...junk, remoteAddress: FLOOD });
          floodSent += 1;
          if (res.statusCode === 429) floodRefused += 1;
        }
        // Another tenant's API, from its own server, keeps answering.
        const other = await h.app.inject({ url: '/org/v1/apps', headers: neighbour.auth, remoteAddress: '192.0.2.5' });
        if (other.statusCode !== 200) neighbourRefused += 1;
      }
      await settle(running, parked);
      h.clock.advance(TICK_MS);
    }
    await settle(running, parked);

    const completed = students.filter(
      (s) =>
        s.walletVerified === true &&
        s.pagePanel === 'verified' &&
        s.pageDoneAt !== undefined &&
        s.pageDoneAt <= s.opensAt + MINUTE,
    );
    const refusals = students.reduce((sum, s) => sum + s.refused, 0);
    t.diagnostic(
      `${completed.length} completed; ${refusals} student requests refused; flood ${floodRefused}/${floodSent} refused`,
    );
    assert.ok(
      completed.length >= 195,
      `${completed.length} of ${STUDENTS} students completed within their minute (${refusals} of their requests refused)`,
    );
    // The flood: at most the address's budget per minute got through, the rest was refused.
    assert.ok(floodRefused >= floodSent - 300, `flood: ${floodRefused} of ${floodSent} refused`);
    assert.equal(neighbourRefused, 0, "the other tenant's API answered every request");
  });
});
