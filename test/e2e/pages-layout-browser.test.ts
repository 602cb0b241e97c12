import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import {
  DESKTOP,
  launchBrowser,
  screenshot,
  startPortalServer,
  watchPage,
  type BrowserSession,
  type PortalServer,
} from '../support/browser.ts';
import { createSession } from '../support/sessions.ts';

/**
 * Every page a newcomer opens in the first hour (the landing page, the API reference at /docs, the
 * portal, the sandbox wallet), in Chromium at a desktop width and a 390 px phone: nothing scrolls
 * sideways, and nothing logs an error or breaks the Content-Security-Policy.
 */

const PHONE_390 = { width: 390, height: 844 };
const WAIT = { timeout: 30_000 };

describe('first pages at 1280 and 390 px', () => {
  let server: PortalServer;
  let browser: BrowserSession;
  let pages: Array<{ name: string; url: string; ready: (page: Page) => Promise<unknown> }>;

  before(async () => {
    [server, browser] = await Promise.all([startPortalServer('sqlite'), launchBrowser()]);
    const s = await createSession(server.h, server.sandbox, {
      purpose: '15% student discount on your order',
      requiredClaims: ['is_active_student', 'university_domain'],
    });
    const heading = (name: string | RegExp) => (page: Page) =>
      page.getByRole('heading', { name }).first().waitFor(WAIT);
    pages = [
      { name: 'landing', url: '/', ready: heading(/Matricula/) },
      // Swagger UI renders in the browser: wait for the operations to be drawn.
      { name: 'docs', url: '/docs', ready: (page) => page.locator('.opblock').first().waitFor(WAIT) },
      { name: 'portal', url: new URL(s.verificationUrl).pathname, ready: heading(/asks you to confirm/) },
      {
        name: 'wallet',
        url: `/wallet?payload=${encodeURIComponent(s.qrPayload)}`,
        ready: heading(/asks you to share/),
      },
    ];
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  for (const viewport of [DESKTOP, PHONE_390]) {
    test(`at ${viewport.width} px: no horizontal overflow, no console error, no CSP violation`, async () => {
      for (const { name, url, ready } of pages) {
        const page = await browser.context.newPage();
        try {
          await page.setViewportSize(viewport);
          const watch = watchPage(page, server.origin);
          const response = await page.goto(`${server.origin}${url}`);
          assert.equal(response?.status(), 200, name);
          await ready(page);
          // 'load', not 'networkidle': the portal keeps one long-poll for its status open.
          await page.waitForLoadState('load');
          const width = await page.evaluate(() => ({
            document: document.documentElement.scrollWidth,
            body: document.body.scrollWidth,
            viewport: window.innerWidth,
          }));
          await screenshot(page, `first-hour-${name}-${viewport.width}`);
          assert.ok(
            width.document <= width.viewport && width.body <= width.viewport,
            `${name} at ${viewport.width} px scrolls sideways: ${JSON.stringify(width)}`,
          );
          assert.deepEqual(watch, { cspViolations: [], consoleErrors: [], foreignRequests: [] }, name);
        } finally {
          await page.close();
        }
      }
    });
  }

  test('/docs is branded: the service name and a way back to the home page', async () => {
    const page = await browser.context.newPage();
    try {
      await page.goto(`${server.origin}/docs`);
      await page.locator('.opblock').first().waitFor(WAIT);
      assert.match(await page.title(), /Matricula/);
      assert.equal(await page.locator('a[href="/"]').first().isVisible(), true, 'a link to the home page');
    } finally {
      await page.close();
    }
  });
});
