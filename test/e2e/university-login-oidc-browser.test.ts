import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { addIdentityProvider } from '../../src/services/sso/registry.ts';
import {
  launchBrowser,
  screenshot,
  startPortalServer,
  watchPage,
  type BrowserSession,
  type PortalServer,
} from '../support/browser.ts';
import { OP_CLIENT_ID, OP_CLIENT_SECRET, startTestOp, type TestOp } from '../support/oidc-provider.ts';
import { createSession, getSession } from '../support/sessions.ts';

/**
 * "Sign in with your university" through an OpenID provider (panva's oidc-provider) in Chromium,
 * at 1280 and 390 px: the portal's search finds it, its login page signs the student in, and the
 * browser comes back through the callback to the portal, which shows the session verified.
 */
describe('university login through an OpenID provider, in Chromium', () => {
  let portal: PortalServer;
  let browser: BrowserSession;
  let op: TestOp;
  before(async () => {
    portal = await startPortalServer('sqlite', { IDP_SECRETS_KEY: '11'.repeat(32) });
    op = await startTestOp(`${portal.origin}/oidc/v1/callback`);
    const added = await addIdentityProvider(portal.h.services, {
      environment: 'sandbox',
      oidcIssuer: op.issuer,
      clientId: OP_CLIENT_ID,
      clientSecret: OP_CLIENT_SECRET,
      name: 'Universiteit van Proef',
      domain: 'uni.test',
      country: 'NL',
    });
    assert.ok(added.ok, JSON.stringify(added));
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await op?.close();
    await portal?.close();
  });

  for (const width of [1280, 390]) {
    test(`search, the OpenID provider's login page and the return, at ${width} px`, async () => {
      // A new visit: no session at the provider from the previous width.
      await browser.context.clearCookies();
      const page = await browser.context.newPage();
      // Only the two servers of the test: the provider's dev login page imports a web font.
      await page.route('**/*', (route) =>
        route.request().url().startsWith('http://127.0.0.1:') ? route.continue() : route.abort(),
      );
      await page.setViewportSize({ width, height: 860 });
      const watch = watchPage(page, portal.origin);
      // The provider's dev login page logs its blocked web font; only our pages' errors count.
      const ourErrors: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error' && message.location().url.startsWith(portal.origin))
          ourErrors.push(message.text());
      });
      portal.h.clock.set(new Date());
      const session = await createSession(portal.h, portal.sandbox);
      await page.goto(`${portal.origin}/verify/${session.sessionId}`);
      await page.fill('#idp-search', 'proef');
      const option = page.locator('.idp-option', { hasText: 'Universiteit van Proef' });
      await option.waitFor();
      await option.click();
      await page.waitForURL((url) => url.href.startsWith(`${op.issuer}/interaction/`));
      await page.fill('input[name="login"]', 'student');
      await page.fill('input[name="password"]', 'any');
      await page.click('button[type="submit"]');
      await page.waitForURL(new RegExp(`^${portal.origin}/verify/${session.sessionId}$`));
      await page.locator('[data-panel="verified"]:not([hidden])').waitFor();
      await screenshot(page, `university-login-oidc-verified-${width}`);
      const read = (await getSession(portal.h, portal.sandbox, session.sessionId)).json().data;
      assert.equal(read.result.verified, true);
      assert.equal(read.result.protocol, 'oidc');
      assert.equal(read.result.university.name, 'Universiteit van Proef');
      assert.deepEqual(ourErrors, []);
      assert.deepEqual(watch.cspViolations, []);
      await page.close();
    });
  }
});
