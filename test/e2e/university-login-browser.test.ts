import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { seedSandboxIdentityProvider } from '../../src/services/sso/sandbox-idp.ts';
import {
  launchBrowser,
  screenshot,
  startPortalServer,
  watchPage,
  type BrowserSession,
  type PortalServer,
} from '../support/browser.ts';
import { createSession, getSession } from '../support/sessions.ts';

/**
 * "Sign in with your university" in Chromium, at 1280 and 390 px: the portal's type-ahead finds
 * the sandbox university, its login page signs the student in, and the browser comes back to the
 * portal, which shows the session verified. The last choice is remembered on the device.
 */
describe('university login through the sandbox SAML IdP, in Chromium', () => {
  let portal: PortalServer;
  let browser: BrowserSession;
  before(async () => {
    portal = await startPortalServer('sqlite');
    portal.h.clock.set(new Date());
    await seedSandboxIdentityProvider(portal.h.services);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await portal?.close();
  });

  for (const width of [1280, 390]) {
    test(`search, the IdP's login page and the return, at ${width} px`, async () => {
      const page = await browser.context.newPage();
      await page.setViewportSize({ width, height: 860 });
      const watch = watchPage(page, portal.origin);
      portal.h.clock.set(new Date());
      const session = await createSession(portal.h, portal.sandbox);
      await page.goto(`${portal.origin}/verify/${session.sessionId}`);
      await page.fill('#idp-search', 'sandbox state');
      const option = page.locator('.idp-option', { hasText: 'Sandbox State University' });
      await option.waitFor();
      const overflow = await page.evaluate(
        'document.documentElement.scrollWidth > document.documentElement.clientWidth',
      );
      assert.equal(overflow, false, 'no horizontal overflow');
      await screenshot(page, `university-login-search-${width}`);
      await option.click();
      await page.waitForURL(/\/sandbox\/idp\/v1\/sso/);
      await page.click('text=Sign in as a student');
      await page.waitForURL(new RegExp(`/verify/${session.sessionId}$`));
      await page.locator('[data-panel="verified"]:not([hidden])').waitFor();
      await screenshot(page, `university-login-verified-${width}`);
      const read = (await getSession(portal.h, portal.sandbox, session.sessionId)).json().data;
      assert.equal(read.result.verified, true);
      assert.equal(read.result.protocol, 'saml');

      // The next session on this device offers the last choice directly.
      const next = await createSession(portal.h, portal.sandbox);
      await page.goto(`${portal.origin}/verify/${next.sessionId}`);
      await page.locator('[data-last-choice]:not([hidden]) button', { hasText: 'Sandbox State University' }).waitFor();
      assert.deepEqual(watch.consoleErrors, []);
      assert.deepEqual(watch.cspViolations, []);
      await page.close();
    });
  }
});
