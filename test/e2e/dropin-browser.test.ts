import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import {
  DESKTOP,
  launchBrowser,
  screenshot,
  startPortalServer,
  type BrowserSession,
  type PortalServer,
} from '../support/browser.ts';
import { buildPresentation, consent, createSession, submit, type CreatedSession } from '../support/sessions.ts';

/**
 * The drop-in (`/js/v1/matricula.js`, issue 28) on a shop's page of another origin (a server this
 * test starts on 127.0.0.1): the portal opens in a modal and the page learns the session's status
 * by postMessage; on a phone the page goes to the portal, which sends the student back to the
 * session's returnUrl with the session id. SQLite only: storage of returnUrl and its origins is
 * covered by the API suites on both databases.
 */
const PHONE_390 = { width: 390, height: 844 };
const WAIT = { timeout: 20_000 };

/** The shop's page: loads the drop-in from the service and verifies the session its query names. */
function shopPage(serviceOrigin: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Campus Bookshop checkout</title>
<script src="${serviceOrigin}/js/v1/matricula.js"></script></head>
<body><main><h1>Checkout</h1><button id="verify" type="button">Verify I am a student</button>
<output id="outcome"></output></main>
<script>
document.getElementById('verify').addEventListener('click', async () => {
  const result = await Matricula.verify(new URLSearchParams(location.search).get('url'));
  document.getElementById('outcome').textContent = JSON.stringify(result);
});
</script></body></html>`;
}

async function startShop(serviceOrigin: string): Promise<{ server: Server; origin: string }> {
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://shop').pathname;
    const body =
      path === '/checkout' ? shopPage(serviceOrigin) : `<!doctype html><title>Back at the shop</title><h1>Back</h1>`;
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

describe('drop-in button in Chromium', () => {
  const dialect = 'sqlite';
  let service: PortalServer;
  let browser: BrowserSession;
  let shop: { server: Server; origin: string };

  before(async () => {
    [service, browser] = await Promise.all([startPortalServer(dialect), launchBrowser()]);
    shop = await startShop(service.origin);
    const res = await service.h.app.inject({
      method: 'PATCH',
      url: `/org/v1/apps/${service.sandbox.appId}`,
      headers: service.sandbox.auth,
      payload: { name: 'Campus Bookshop', allowedReturnOrigins: [shop.origin] },
    });
    assert.equal(res.statusCode, 200, res.body);
  });
  after(async () => {
    await browser?.close();
    await service?.close();
    await new Promise((resolve) => shop?.server.close(resolve));
  });

  async function complete(s: CreatedSession): Promise<void> {
    assert.equal((await consent(service.h, s)).statusCode, 200);
    const presentation = await buildPresentation(service.h, 'sd-jwt-vc', { nonce: s.challengeNonce });
    assert.equal((await submit(service.h, s, 'sd-jwt-vc', presentation)).json().data.verified, true);
  }

  test('desktop: the portal opens in a modal and the shop page gets {sessionId, status}', async () => {
    const s = await createSession(service.h, service.sandbox, { returnUrl: `${shop.origin}/back` });
    const page = await browser.context.newPage();
    await page.setViewportSize(DESKTOP);
    const errors: string[] = [];
    page.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())));
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${shop.origin}/checkout?url=${encodeURIComponent(s.verificationUrl)}`);
    await page.getByRole('button', { name: 'Verify I am a student' }).click();
    const dialog = page.getByRole('dialog', { name: 'Student verification' });
    await dialog.waitFor(WAIT);
    const portal = page.frameLocator('iframe[title="Student verification"]');
    await portal.getByRole('heading', { name: 'Campus Bookshop asks you to confirm you are a student' }).waitFor(WAIT);
    await screenshot(page, `dropin-modal-desktop-${dialect}`);

    // A message that does not come from the portal's frame is ignored, whatever it says.
    await page.evaluate(
      (sessionId) => window.postMessage({ type: 'matricula:session', sessionId, status: 'completed' }, '*'),
      s.sessionId,
    );
    await complete(s);
    await page.locator('#outcome').filter({ hasText: 'completed' }).waitFor(WAIT);
    assert.deepEqual(JSON.parse(await page.locator('#outcome').innerText()), {
      sessionId: s.sessionId,
      status: 'completed',
    });
    assert.equal(await dialog.count(), 0, 'the modal closed');
    assert.deepEqual(errors, []);
  });

  test('the forged message alone resolves nothing; closing the modal resolves dismissed', async () => {
    const s = await createSession(service.h, service.sandbox);
    const page = await browser.context.newPage();
    await page.goto(`${shop.origin}/checkout?url=${encodeURIComponent(s.verificationUrl)}`);
    await page.getByRole('button', { name: 'Verify I am a student' }).click();
    const portal = page.frameLocator('iframe[title="Student verification"]');
    await portal.getByRole('heading', { name: 'Scan with your student wallet' }).waitFor(WAIT);
    await page.evaluate(
      (sessionId) => window.postMessage({ type: 'matricula:session', sessionId, status: 'completed' }, '*'),
      s.sessionId,
    );
    // The forged message was delivered before this round trip ends; nothing may have resolved.
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 0)));
    assert.equal(await page.locator('#outcome').innerText(), '');
    await page.getByRole('button', { name: 'Close' }).click();
    assert.equal(JSON.parse(await page.locator('#outcome').innerText()).status, 'dismissed');
  });

  test('phone: the page goes to the portal, which sends the student back with the session id only', async () => {
    const s = await createSession(service.h, service.sandbox, { returnUrl: `${shop.origin}/back?order=42` });
    const page = await browser.context.newPage();
    await page.setViewportSize(PHONE_390);
    await page.goto(`${shop.origin}/checkout?url=${encodeURIComponent(s.verificationUrl)}`);
    await page.getByRole('button', { name: 'Verify I am a student' }).click();
    await page.waitForURL(s.verificationUrl, WAIT);
    assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= PHONE_390.width);
    await screenshot(page, `dropin-portal-phone-${dialect}`);
    await complete(s);
    await page.getByRole('link', { name: 'Back to Campus Bookshop' }).waitFor(WAIT);
    await screenshot(page, `dropin-verified-phone-${dialect}`);
    await page.waitForURL(`${shop.origin}/back?order=42&session=${s.sessionId}`, WAIT);
  });
});
