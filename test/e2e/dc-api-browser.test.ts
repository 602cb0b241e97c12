import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CDPSession, Page } from 'playwright-core';
import {
  DESKTOP,
  launchBrowser,
  lowContrast,
  screenshot,
  startPortalServer,
  watchPage,
  type BrowserSession,
  type PageWatch,
  type PortalServer,
} from '../support/browser.ts';
import { dcApiAnswer, resolveDcApi, type DcApiRequest } from '../support/dc-api-holder.ts';
import type { ExportedCredential } from '../support/openid4vp-holder.ts';
import { exportCredential } from '../support/openid4vp-flows.ts';
import { createSession, getSession, type CreatedSession } from '../support/sessions.ts';
import type { PresentOptions } from '../support/openid4vp-holder.ts';

/**
 * "Use a wallet on this device": the portal page in Chromium asks a wallet through the Digital
 * Credentials API, and Chromium's virtual wallet (DevTools protocol,
 * `DigitalCredentials.setVirtualWalletBehavior`) answers for it: with a response the independent
 * holder built (test/support/dc-api-holder.ts), a refusal, or nothing yet. SQLite only: the answer
 * goes through the session's storage like any other, which test/integration/openid4vp-dc-api.test.ts
 * covers on both databases.
 */

const WAIT = { timeout: 15_000 };
const PROOF_WAIT = { timeout: 60_000 };
/** A current phone's width. */
const PHONE = { width: 390, height: 844 };
const TEXT_SELECTORS = 'h1, h2, p, li, a, button, label, .badge, #countdown';

describe('the portal page and the Digital Credentials API in Chromium', () => {
  const dialect = 'sqlite';
  let server: PortalServer;
  let browser: BrowserSession;
  let anchors: string[];
  let credential: ExportedCredential;
  const watches: Array<{ name: string; watch: PageWatch }> = [];

  before(async () => {
    [server, browser] = await Promise.all([startPortalServer(dialect), launchBrowser()]);
    // The holder's library checks the signed request's exp against the real time: the clock starts there.
    server.h.clock.advance(Math.max(0, Date.now() - server.h.clock.now().getTime()));
    anchors = [(await server.h.app.inject({ url: '/openid4vp/v1/certificate' })).body];
    credential = await exportCredential(server.h, server.origin, '--level', 'postgraduate');
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const session = () =>
    createSession(server.h, server.sandbox, {
      purpose: '15% student discount on your order',
      requiredClaims: ['is_active_student', 'university_domain'],
    });

  async function openPortal(s: CreatedSession, viewport = DESKTOP): Promise<{ page: Page; cdp: CDPSession }> {
    const page = await browser.context.newPage();
    await page.setViewportSize(viewport);
    watches.push({ name: `portal ${s.sessionId}`, watch: watchPage(page, server.origin) });
    const response = await page.goto(s.verificationUrl);
    assert.equal(response?.status(), 200);
    assert.equal(response?.headers()['permissions-policy'], 'digital-credentials-get=(self)');
    await page.getByRole('button', { name: 'Use a wallet on this device' }).waitFor(WAIT);
    return { page, cdp: await browser.context.newCDPSession(page) };
  }

  /** The requests the page hands the browser, as the page fetches them. */
  async function pageRequests(page: Page): Promise<DcApiRequest[]> {
    const path = await page.locator('#dc-api').getAttribute('data-request-path');
    const res = await server.h.app.inject({ url: path! });
    return res.json().requests as DcApiRequest[];
  }

  /** What a wallet on the device answers to the page's request of `protocol`. */
  async function walletAnswer(page: Page, protocol: string, options: PresentOptions = {}) {
    const request = (await pageRequests(page)).find((r) => r.protocol === protocol)!;
    const resolved = await resolveDcApi(request, server.origin, anchors);
    // The protocol's type for `response` is a string map: a dc_api.jwt answer is one ({response: <JWE>}).
    return (await dcApiAnswer(resolved, credential, server.origin, server.h.clock.now(), options)) as Record<
      string,
      string
    >;
  }

  const useWallet = (page: Page) => page.getByRole('button', { name: 'Use a wallet on this device' }).click();
  const heading = (page: Page, name: string) => page.getByRole('heading', { name, exact: true });
  const status = async (s: CreatedSession) => (await getSession(server.h, server.sandbox, s.sessionId)).json().data;

  test('the wallet answers the signed request: the session completes verified, the page says so', async () => {
    const s = await session();
    const { page, cdp } = await openPortal(s);
    assert.deepEqual(await lowContrast(page, TEXT_SELECTORS), []);
    await screenshot(page, 'portal-dc-api-desktop');
    await cdp.send('DigitalCredentials.setVirtualWalletBehavior', {
      action: 'respond',
      protocol: 'openid4vp-v1-signed',
      response: await walletAnswer(page, 'openid4vp-v1-signed'),
    });
    await useWallet(page);
    await heading(page, 'Verified').waitFor(PROOF_WAIT);
    const data = await status(s);
    assert.deepEqual([data.status, data.result.verified, data.result.protocol], ['completed', true, 'openid4vp']);
    await screenshot(page, 'portal-dc-api-verified-desktop');
  });

  test('on a phone, the unsigned request: verified too, and the page fits the screen', async () => {
    const s = await session();
    const { page, cdp } = await openPortal(s, PHONE);
    assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= PHONE.width);
    const button = await page.getByRole('button', { name: 'Use a wallet on this device' }).boundingBox();
    assert.ok(button && button.x >= 0 && button.x + button.width <= PHONE.width, 'the button fits the width');
    await screenshot(page, 'portal-dc-api-phone');
    await cdp.send('DigitalCredentials.setVirtualWalletBehavior', {
      action: 'respond',
      protocol: 'openid4vp-v1-unsigned',
      response: await walletAnswer(page, 'openid4vp-v1-unsigned'),
    });
    await useWallet(page);
    await heading(page, 'Verified').waitFor(PROOF_WAIT);
    assert.equal((await status(s)).result.verified, true);
  });

  test('the student declines in the wallet: the session is declined', async () => {
    const s = await session();
    const { page, cdp } = await openPortal(s, PHONE);
    await cdp.send('DigitalCredentials.setVirtualWalletBehavior', { action: 'decline' });
    await useWallet(page);
    await heading(page, 'You declined').waitFor(WAIT);
    assert.equal((await status(s)).status, 'declined');
    await screenshot(page, 'portal-dc-api-declined-phone');
  });

  test('while the wallet is open the page waits; the session stays pending and the codes stay', async () => {
    const s = await session();
    const { page, cdp } = await openPortal(s);
    await cdp.send('DigitalCredentials.setVirtualWalletBehavior', { action: 'wait' });
    await useWallet(page);
    await page.getByText('Choose your wallet in the window your browser opens.').waitFor(WAIT);
    assert.equal(await page.getByRole('button', { name: 'Use a wallet on this device' }).isDisabled(), true);
    assert.equal((await status(s)).status, 'pending');
    assert.equal(
      await page
        .getByRole('img', { name: /QR code/ })
        .first()
        .isVisible(),
      true,
    );
    await page.close();
  });

  test('an answer bound to another origin or another nonce is refused: a failed attempt, the page says why', async () => {
    const s = await session();
    const { page, cdp } = await openPortal(s);
    const watch = watches[watches.length - 1]!.watch;
    for (const [options, reason] of [
      [{ aud: 'origin:https://evil.example' }, /audience|aud/i],
      [{ nonce: 'another-nonce' }, /nonce/i],
    ] as const) {
      await cdp.send('DigitalCredentials.setVirtualWalletBehavior', {
        action: 'respond',
        protocol: 'openid4vp-v1-signed',
        response: await walletAnswer(page, 'openid4vp-v1-signed', options),
      });
      if (await page.getByRole('button', { name: 'Use a wallet on this device' }).isVisible()) await useWallet(page);
      else await page.evaluate('document.getElementById("dc-api-button").click()');
      await page.getByText(reason).first().waitFor(WAIT);
      assert.match(await page.locator('#dc-api-status').innerText(), /^Your wallet’s answer was not accepted: /);
    }
    const data = await status(s);
    assert.equal(data.status, 'consented', 'not completed: two failed attempts');
    assert.equal(data.result ?? null, null);
    // The two refusals are 400s, which Chromium logs; nothing else is.
    assert.deepEqual(
      watch.consoleErrors,
      Array(2).fill('Failed to load resource: the server responded with a status of 400 (Bad Request)'),
    );
    watch.consoleErrors.length = 0;
  });

  test('without the Digital Credentials API the option is not shown; the QR codes are', async () => {
    const s = await session();
    const page = await browser.context.newPage();
    watches.push({ name: `portal without DC API ${s.sessionId}`, watch: watchPage(page, server.origin) });
    await page.addInitScript('delete window.DigitalCredential');
    await page.goto(s.verificationUrl);
    await page
      .getByRole('img', { name: /QR code/ })
      .first()
      .waitFor(WAIT);
    assert.equal(await page.locator('#dc-api').isHidden(), true);
    const other = await page.goto(`${server.origin}/`);
    assert.equal(other?.headers()['permissions-policy'], 'digital-credentials-get=()');
  });

  test('no page logged an error or broke its policy', () => {
    for (const { name, watch } of watches) {
      assert.deepEqual(watch.cspViolations, [], name);
      assert.deepEqual(watch.consoleErrors, [], name);
      assert.deepEqual(watch.foreignRequests, [], name);
    }
  });
});
