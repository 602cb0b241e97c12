import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import {
  decodeQr,
  DESKTOP,
  launchBrowser,
  lowContrast,
  PHONE,
  screenshot,
  startPortalServer,
  watchPage,
  type BrowserSession,
  type PageWatch,
  type PortalServer,
} from '../support/browser.ts';
import { createSession, getSession, type CreatedSession } from '../support/sessions.ts';

/**
 * The portal and the sandbox wallet in Chromium, against the real app on a loopback port. The
 * test clock stays where the test puts it (hours away from the browser's own clock), so a page
 * that counted down from the device's date instead of the server's would show the wrong time.
 * SQLite only: storage is covered by the API suites on both dialects.
 */

const WAIT = { timeout: 15_000 };
const PROOF_WAIT = { timeout: 60_000 };
const TEXT_SELECTORS = 'h1, h2, p, li, a, button, label, legend, option, .badge, #countdown';

describe('portal and sandbox wallet in Chromium', () => {
  let server: PortalServer;
  let browser: BrowserSession;
  let shopAppId: string;
  const watches: Array<{ name: string; watch: PageWatch }> = [];

  before(async () => {
    [server, browser] = await Promise.all([startPortalServer('sqlite'), launchBrowser()]);
    const res = await server.h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: server.sandbox.auth,
      payload: { name: 'Campus Bookshop' },
    });
    shopAppId = res.json().data.id;
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const session = (body: Record<string, unknown> = {}) =>
    createSession(server.h, server.sandbox, {
      appId: shopAppId,
      purpose: '15% student discount on your order',
      requiredClaims: ['is_active_student', 'university_domain'],
      ...body,
    });

  async function newPage(name: string, viewport = DESKTOP): Promise<Page> {
    const page = await browser.context.newPage();
    await page.setViewportSize(viewport);
    watches.push({ name, watch: watchPage(page, server.origin) });
    return page;
  }

  /**
   * Opens the portal and marks the document, so that a later check can tell it was never reloaded.
   * Where the browser has the Digital Credentials API, the page fetches the session's requests for
   * it as it loads (dc-api.js): that fetch is answered first, so that a test which then ends the
   * session (cancels it, lets it expire) does not make it fail with a 400 on the console.
   */
  async function openPortal(s: CreatedSession, viewport = DESKTOP): Promise<Page> {
    const page = await newPage(`portal ${s.sessionId}`, viewport);
    const dcApiRequest = page.waitForResponse((r) => new URL(r.url()).pathname.endsWith('/dc-api/request'), WAIT);
    dcApiRequest.catch(() => {});
    const response = await page.goto(s.verificationUrl);
    assert.equal(response?.status(), 200);
    // The conditions under which dc-api.js fetches them.
    const offersDcApi = await page.evaluate(() => {
      const policy = (document as { featurePolicy?: { allowsFeature(name: string): boolean } }).featurePolicy;
      return (
        document.getElementById('dc-api') !== null &&
        typeof (window as { DigitalCredential?: unknown }).DigitalCredential === 'function' &&
        navigator.credentials !== undefined &&
        (!policy || policy.allowsFeature('digital-credentials-get'))
      );
    });
    if (offersDcApi) assert.equal((await dcApiRequest).status(), 200);
    await page.evaluate(() => Object.assign(window, { loadedOnce: true }));
    return page;
  }

  const sameDocument = (page: Page) =>
    page.evaluate(() => (window as unknown as { loadedOnce?: boolean }).loadedOnce === true);

  /** Follows the portal's "Open in sandbox wallet" link into the new tab it opens. */
  async function openSandboxWallet(portal: Page, viewport = DESKTOP): Promise<Page> {
    const [wallet] = await Promise.all([
      browser.context.waitForEvent('page'),
      portal.getByRole('link', { name: 'Open in sandbox wallet' }).click(),
    ]);
    watches.push({ name: `wallet from ${portal.url()}`, watch: watchPage(wallet, server.origin) });
    await wallet.setViewportSize(viewport);
    await wallet.getByRole('heading', { name: 'Campus Bookshop asks you to share' }).waitFor(WAIT);
    return wallet;
  }

  const heading = (page: Page, name: string) => page.getByRole('heading', { name, exact: true });

  async function assertFitsWidth(page: Page, width: number): Promise<void> {
    assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= width, 'no horizontal scrolling');
  }

  test('approve: the portal shows the request and a QR code of qrPayload, the wallet verifies, the portal turns verified without a reload', async () => {
    const s = await session();
    const portal = await openPortal(s);
    const statusRequests: string[] = [];
    portal.on('request', (request) => {
      if (request.url().includes('/status')) statusRequests.push(request.url());
    });

    assert.equal(await portal.title(), 'Verify for Campus Bookshop · Matricula');
    await heading(portal, 'Campus Bookshop asks you to confirm you are a student').waitFor(WAIT);
    assert.match(await portal.locator('.purpose').innerText(), /15% student discount on your order/);
    // Exactly what the wallet will be asked to disclose: the date too, which the business receives.
    assert.deepEqual(await portal.locator('.claims li').allInnerTexts(), [
      'That you are currently enrolled as a student',
      'Which university you study at',
      'The date your student status is valid until',
    ]);
    // Counted from the server's clock (the browser's is hours away from the test clock).
    assert.match(await portal.locator('#countdown').innerText(), /^(5:00|4:5\d)$/);
    const qr = portal.getByRole('img', { name: /QR code/ });
    assert.equal(decodeQr(await qr.screenshot()), s.qrPayload);
    assert.equal(await portal.getByRole('link', { name: 'Open in wallet' }).getAttribute('href'), s.qrPayload);
    assert.deepEqual(await lowContrast(portal, TEXT_SELECTORS), []);
    await screenshot(portal, 'portal-pending-desktop');

    const wallet = await openSandboxWallet(portal);
    assert.match(await wallet.locator('.purpose').innerText(), /15% student discount on your order/);
    const accepted = (
      await server.h.app.inject({
        method: 'GET',
        url: `/verification/v1/sessions/${s.sessionId}/request?nonce=${encodeURIComponent(s.challengeNonce)}`,
      })
    ).json().data.acceptedFormats as string[];
    // The simulated wallet builds every accepted format but jwt-vc (it holds no W3C credential).
    const offered = accepted.filter((format) => format !== 'jwt-vc');
    assert.deepEqual(
      await wallet
        .getByRole('group', { name: 'Format' })
        .getByRole('radio')
        .evaluateAll((radios) => radios.map((r) => (r as HTMLInputElement).value)),
      offered,
    );
    assert.deepEqual(await lowContrast(wallet, TEXT_SELECTORS), []);
    await screenshot(wallet, 'wallet-request-desktop');

    await wallet.getByLabel('University').selectOption('pruebas.example');
    await wallet.getByRole('button', { name: 'Approve and share' }).click();
    await heading(wallet, 'Verified').waitFor(PROOF_WAIT);
    await screenshot(wallet, 'wallet-verified-desktop');

    await heading(portal, 'Verified').waitFor(WAIT);
    assert.equal(await sameDocument(portal), true);
    assert.equal(await portal.title(), 'Verified · Matricula');
    // One long poll at a time, answered by each change (consent, then completion), not a poll every
    // 1.5 s: the test clock never reaches the end of a wait, so no request ends without a change.
    assert.ok(statusRequests.length <= 3, `status requests: ${statusRequests.join(', ')}`);
    for (const url of statusRequests) assert.match(url, /\?wait=25&seen=(pending|consented)$/);
    assert.match(
      await portal.locator('#announcer').innerText(),
      /^Verified\. Campus Bookshop now knows you are an active student/,
    );
    assert.equal(await qr.isVisible(), false);
    assert.equal(await portal.locator('#countdown').isVisible(), false);
    assert.deepEqual(await lowContrast(portal, TEXT_SELECTORS), []);
    await screenshot(portal, 'portal-verified-desktop');

    const result = (await getSession(server.h, server.sandbox, s.sessionId)).json().data.result;
    assert.equal(result.verified, true);
    // The portal listed the date, the wallet disclosed it, the business receives it.
    const { valid_until: validUntil, ...claims } = result.claims;
    assert.deepEqual(claims, { is_active_student: true, university_domain: 'pruebas.example', academic_level: null });
    assert.match(validUntil, /^\d{4}-\d{2}-\d{2}T00:00:00\.000Z$/);
  });

  test('not verified, on a phone: a student no longer enrolled; the wallet says why, the portal does not', async () => {
    const s = await session();
    const portal = await openPortal(s, PHONE);
    await assertFitsWidth(portal, PHONE.width);
    assert.equal(decodeQr(await portal.getByRole('img', { name: /QR code/ }).screenshot()), s.qrPayload);
    await screenshot(portal, 'portal-pending-phone');

    const wallet = await openSandboxWallet(portal, PHONE);
    await assertFitsWidth(wallet, PHONE.width);
    await screenshot(wallet, 'wallet-request-phone');
    await wallet.getByLabel('No longer enrolled').check();
    await wallet.getByRole('button', { name: 'Approve and share' }).click();
    await heading(wallet, 'Not verified').waitFor(PROOF_WAIT);
    assert.equal(await wallet.getByText('The credential shows a student who is no longer enrolled.').isVisible(), true);
    await screenshot(wallet, 'wallet-not-verified-phone');

    await heading(portal, 'Not verified').waitFor(WAIT);
    assert.equal(await sameDocument(portal), true);
    assert.equal(await portal.getByText(/no longer enrolled/).count(), 0);
    // On a phone the outcome comes first, where the eye is.
    const box = await heading(portal, 'Not verified').boundingBox();
    assert.ok(box && box.y < PHONE.height, 'the outcome is on screen without scrolling');
    await assertFitsWidth(portal, PHONE.width);
    await screenshot(portal, 'portal-not-verified-phone');
  });

  test('decline, with the keyboard only: every focus is visible, the wallet and the portal say declined', async () => {
    const s = await session();
    const portal = await openPortal(s);
    const wallet = await openSandboxWallet(portal);

    const focused = () =>
      wallet.evaluate(() => {
        const element = document.activeElement as HTMLElement;
        const style = getComputedStyle(element);
        return {
          id: element.id,
          text: element.textContent?.trim() ?? '',
          outline: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2,
        };
      });
    await wallet.keyboard.press('Tab');
    const skip = await focused();
    assert.equal(skip.text, 'Skip to content');
    assert.ok(
      (await wallet.getByRole('link', { name: 'Skip to content' }).boundingBox())!.y >= 0,
      'the skip link shows when focused',
    );
    let reached = false;
    for (let i = 0; i < 40 && !reached; i++) {
      await wallet.keyboard.press('Tab');
      const now = await focused();
      assert.ok(now.outline, `visible focus on #${now.id} "${now.text.slice(0, 30)}"`);
      reached = now.id === 'decline';
    }
    assert.ok(reached, 'Decline is reachable with Tab');
    await wallet.keyboard.press('Enter');
    await heading(wallet, 'You declined').waitFor(WAIT);
    assert.equal((await focused()).text, 'You declined', 'focus moves to the outcome');
    await screenshot(wallet, 'wallet-declined-desktop');

    await heading(portal, 'You declined').waitFor(WAIT);
    assert.equal(await sameDocument(portal), true);
    await screenshot(portal, 'portal-declined-desktop');
    assert.equal((await getSession(server.h, server.sandbox, s.sessionId)).json().data.status, 'declined');
  });

  test('expiry: the countdown follows the server clock, and the page learns of expiry from the server', async () => {
    const s = await session({ expiresInSeconds: 60 });
    const portal = await openPortal(s);
    assert.match(await portal.locator('#countdown').innerText(), /^(1:00|0:5\d)$/);

    server.h.clock.advance(45_000);
    await portal.waitForFunction(
      () => {
        const [m, sec] = (document.getElementById('countdown')?.textContent ?? '9:99').split(':').map(Number);
        return m! * 60 + sec! <= 15;
      },
      undefined,
      WAIT,
    );
    assert.equal(await portal.locator('.countdown.soon').isVisible(), true);
    assert.equal(
      await heading(portal, 'Scan with your student wallet').isVisible(),
      true,
      'not expired until the server says so',
    );

    server.h.clock.advance(15_000);
    await heading(portal, 'This code has expired').waitFor(WAIT);
    assert.equal(await sameDocument(portal), true);
    assert.equal(await portal.getByRole('img', { name: /QR code/ }).isVisible(), false);
    await screenshot(portal, 'portal-expired-desktop');
  });

  test('cancelled by the business while the portal is open', async () => {
    const s = await session();
    const portal = await openPortal(s);
    const res = await server.h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${s.sessionId}/cancel`,
      headers: server.sandbox.auth,
    });
    assert.equal(res.statusCode, 200);
    await heading(portal, 'Verification cancelled').waitFor(WAIT);
    assert.equal(await sameDocument(portal), true);
    await screenshot(portal, 'portal-cancelled-desktop');
  });

  test('the wallet answers in every format the service verifies', async () => {
    const probe = await session();
    const accepted = (
      await server.h.app.inject({
        method: 'GET',
        url: `/verification/v1/sessions/${probe.sessionId}/request?nonce=${encodeURIComponent(probe.challengeNonce)}`,
      })
    ).json().data.acceptedFormats as string[];
    for (const format of accepted.filter((f) => f !== 'jwt-vc')) {
      const s = await session({ requiredClaims: ['is_active_student', 'academic_level', 'valid_until'] });
      const wallet = await newPage(`wallet ${format}`);
      await wallet.goto(`${server.origin}/wallet?payload=${encodeURIComponent(s.qrPayload)}`);
      await wallet.getByLabel(format, { exact: true }).check();
      await wallet.getByLabel('Level of study').selectOption('doctoral');
      await wallet.getByRole('button', { name: 'Approve and share' }).click();
      await heading(wallet, 'Verified').waitFor(PROOF_WAIT);
      const result = (await getSession(server.h, server.sandbox, s.sessionId)).json().data.result;
      assert.equal(result.format, format);
      assert.equal(result.claims.academic_level, 'doctoral', format);
      await wallet.close();
    }
  });

  test('pasting a qrPayload into the sandbox wallet; a payload of something else is explained', async () => {
    const s = await session();
    const wallet = await newPage('wallet paste');
    await wallet.goto(`${server.origin}/wallet`);
    await screenshot(wallet, 'wallet-start-desktop');
    await wallet.getByLabel('QR payload').fill('https://example.com/not-a-session');
    await wallet.getByRole('button', { name: 'Open' }).click();
    await wallet.getByText('That is not a QR payload of this service').waitFor(WAIT);
    assert.equal(await wallet.getByLabel('QR payload').getAttribute('aria-invalid'), 'true');
    await wallet.getByLabel('QR payload').fill(s.qrPayload);
    await wallet.getByRole('button', { name: 'Open' }).click();
    await heading(wallet, 'Campus Bookshop asks you to share').waitFor(WAIT);
  });

  test('a live session: no sandbox link on its portal, and the sandbox wallet refuses it clearly', async () => {
    const s = await createSession(server.h, server.live, { purpose: 'Student discount' });
    const portal = await openPortal(s);
    assert.equal(await portal.getByRole('link', { name: 'Open in sandbox wallet' }).count(), 0);
    assert.equal(await portal.getByRole('link', { name: 'Open in wallet' }).count(), 1);

    const wallet = await newPage('wallet live');
    const response = await wallet.goto(`${server.origin}/wallet?payload=${encodeURIComponent(s.qrPayload)}`);
    assert.equal(response?.status(), 403);
    await heading(wallet, 'This is a live session').waitFor(WAIT);
    assert.equal(await wallet.getByText(/sandbox sessions only/).isVisible(), true);
    await screenshot(wallet, 'wallet-live-refused-desktop');
    assert.equal((await getSession(server.h, server.live, s.sessionId)).json().data.status, 'pending');
  });

  test('an unknown session gets the friendly 404 page, on desktop and phone', async () => {
    const page = await newPage('not found');
    const response = await page.goto(`${server.origin}/verify/sess_01aaaaaaaaaaaaaaaaaaaaaaaa`);
    assert.equal(response?.status(), 404);
    await heading(page, 'We can’t find this verification').waitFor(WAIT);
    assert.deepEqual(await lowContrast(page, TEXT_SELECTORS), []);
    await screenshot(page, 'not-found-desktop');
    await page.setViewportSize(PHONE);
    await assertFitsWidth(page, PHONE.width);
    await screenshot(page, 'not-found-phone');
  });

  test('no page broke its Content-Security-Policy, logged an error, or fetched anything from elsewhere', () => {
    assert.ok(watches.length >= 10);
    for (const { name, watch } of watches)
      assert.deepEqual(watch, { cspViolations: [], consoleErrors: [], foreignRequests: [] }, name);
  });
});
