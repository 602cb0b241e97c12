import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { createOrganizationWithOwner } from '../../src/services/members.ts';
import { launchBrowser, screenshot, watchPage, type BrowserSession, type PageWatch } from '../support/browser.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { loopbackServer } from '../support/server.ts';
import { buildPresentation, consent, createSession, submit } from '../support/sessions.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { waitUntil, workerAttempts, workerFor } from '../support/webhooks.ts';

/**
 * The dashboard end to end in Chromium (issue 28): the invited owner joins, signs in with the
 * password and with a passkey (a virtual WebAuthn authenticator through the DevTools protocol),
 * creates an application and a key (shown once), adds an endpoint, sees the delivery of a completed
 * sandbox session with its attempt, retries it, and redacts the session. Each page: axe-core finds
 * no serious or critical violation, no horizontal overflow at 390 px, no console error; screenshots
 * at 1280 and 390 px under test-output/screenshots. SQLite only: the storage behind these pages is
 * tested on both databases by test/services/dashboard-services.test.ts and test/dashboard/.
 */
const WAIT = { timeout: 20_000 };
const PASSWORD = 'correct horse battery staple';
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const WIDE = { width: 1280, height: 900 };
const NARROW = { width: 390, height: 844 };

describe('dashboard in Chromium', () => {
  const dialect = 'sqlite';
  let h: Harness;
  let origin: string;
  let browser: BrowserSession;
  let receiver: WebhookReceiver;
  let worker: ReturnType<typeof workerFor>;
  const watches: PageWatch[] = [];

  before(async () => {
    // WebAuthn wants a domain as the relying party: localhost, not 127.0.0.1.
    const server = await loopbackServer();
    origin = `http://localhost:${server.port}`;
    h = await startHarness(dialect, { BASE_URL: origin, PORTAL_URL: origin, PORT: String(server.port) });
    await server.serve(h.app);
    [browser, receiver] = await Promise.all([launchBrowser(), startWebhookReceiver()]);
    worker = workerFor(h);
    await worker.start();
  });
  after(async () => {
    await worker?.stop();
    await browser?.close();
    await receiver?.close();
    await h?.close();
  });

  /** axe-core's serious and critical violations, overflow at 390 px, and screenshots at both widths. */
  async function check(page: Page, name: string): Promise<void> {
    // Evaluated through the DevTools protocol, which the page's CSP does not govern.
    await page.evaluate(AXE);
    const violations = (await page.evaluate(
      `axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`,
    )) as string[];
    assert.deepEqual(violations, [], `${name}: accessibility`);
    await screenshot(page, `dashboard-${name}-1280-${dialect}`);
    await page.setViewportSize(NARROW);
    assert.ok(
      (await page.evaluate(() => document.documentElement.scrollWidth)) <= NARROW.width,
      `${name}: fits 390 px`,
    );
    await screenshot(page, `dashboard-${name}-390-${dialect}`);
    await page.setViewportSize(WIDE);
  }

  test('join, password, passkey, application, key, endpoint, delivery, retry, redaction', async () => {
    const { ownerInvitation } = await createOrganizationWithOwner(h.services, {
      name: 'Campus Bookshop',
      environment: 'sandbox',
      ownerEmail: 'owner@bookshop.example',
    });
    const page = await browser.context.newPage();
    await page.setViewportSize(WIDE);
    const watch = watchPage(page, origin);
    watches.push(watch);
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });

    // The invitation: choose a password, land in the dashboard.
    await page.goto(ownerInvitation.url);
    await page.getByRole('heading', { name: 'Join as owner' }).waitFor(WAIT);
    await check(page, 'invitation');
    await page.getByLabel(/New password/).fill(PASSWORD);
    await page.getByRole('button', { name: 'Join' }).click();
    await page.getByRole('heading', { name: 'Applications (sandbox)' }).waitFor(WAIT);

    // Sign out, sign in again with the password.
    const signOut = () => page.getByRole('button', { name: 'Sign out' }).click();
    await signOut();
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor(WAIT);
    await check(page, 'sign-in');
    await page.getByLabel('E-mail address').fill('owner@bookshop.example');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Applications (sandbox)' }).waitFor(WAIT);

    // A passkey, registered on the account page, then used to sign in.
    await page.getByRole('link', { name: /owner@bookshop\.example/ }).click();
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByText('Passkey added').waitFor(WAIT);
    await signOut();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('heading', { name: 'Applications (sandbox)' }).waitFor(WAIT);
    const { credentials } = (await cdp.send('WebAuthn.getCredentials', {
      authenticatorId: (
        await cdp.send('WebAuthn.addVirtualAuthenticator', { options: { protocol: 'ctap2', transport: 'usb' } })
      ).authenticatorId,
    })) as { credentials: unknown[] };
    assert.deepEqual(credentials, [], 'a second authenticator holds nothing: the first one signed');
    await check(page, 'applications');

    // An application, then a key shown once.
    await page.getByLabel('Name').fill('Checkout');
    await page.getByRole('button', { name: 'Create application' }).click();
    await page.getByRole('heading', { name: 'Checkout' }).waitFor(WAIT);
    const appUrl = page.url();
    await check(page, 'application');
    await page.getByLabel(/New key/).fill('checkout server');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const secret = (await page.locator('#secret-value').innerText()).trim();
    assert.match(secret, /^sk_test_/);
    assert.equal(await page.getByRole('button', { name: 'Copy' }).count(), 1);
    await check(page, 'key-created');
    await page.getByRole('link', { name: 'Done' }).click();
    assert.equal((await page.content()).includes(secret), false, 'the secret is shown once');

    // An endpoint to the test's receiver.
    await page.getByLabel('Endpoint URL').fill(receiver.url);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.locator('#secret-value').waitFor(WAIT);
    await page.getByRole('link', { name: 'Done' }).click();
    await page.getByRole('heading', { name: 'Webhook endpoint' }).waitFor(WAIT);
    const endpointUrl = page.url();

    // A sandbox session through the API with the new key, completed: its delivery reaches the receiver.
    const appId = appUrl.split('/').pop()!;
    const tenant = { orgId: '', appId, keyId: '', secret, auth: { authorization: `Bearer ${secret}` } };
    const s = await createSession(h, tenant);
    assert.equal((await consent(h, s)).statusCode, 200);
    const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce: s.challengeNonce });
    assert.equal((await submit(h, s, 'sd-jwt-vc', presentation)).json().data.verified, true);
    const endpointId = endpointUrl.split('/').pop()!;
    const deliveryStatuses = async () =>
      (await h.app.inject({ method: 'GET', url: `/org/v1/webhooks/${endpointId}/deliveries`, headers: tenant.auth }))
        .json()
        .data.map((d: { status: string }) => d.status) as string[];
    await waitUntil(async () => (await deliveryStatuses()).includes('succeeded'), 'the delivery recorded', {
      on: [[workerAttempts, 'attempt']],
      ms: 20_000,
    });
    await page.goto(endpointUrl);
    await page.locator('.delivery-status', { hasText: 'succeeded' }).waitFor(WAIT);
    assert.match(await page.locator('tbody').innerText(), /verification\.completed[\s\S]*200, \d+ ms/);
    await check(page, 'endpoint');
    await page
      .getByRole('button', { name: /^Retry/ })
      .first()
      .click();
    await page.getByText('Retry scheduled').waitFor(WAIT);
    await receiver.waitForRequests(2);
    await waitUntil(async () => (await deliveryStatuses()).includes('succeeded'), 'the retry recorded', {
      on: [[workerAttempts, 'attempt']],
      ms: 20_000,
    });
    await page.reload();
    assert.match(await page.locator('tbody').innerText(), /200, \d+ ms[\s\S]*200, \d+ ms/);

    // The session: listed, then redacted.
    await page.getByRole('link', { name: 'Sessions' }).click();
    await page.getByRole('link', { name: s.sessionId }).click();
    assert.match(await page.locator('#session-json').innerText(), /"university": \{/);
    await check(page, 'session');
    await page.getByRole('button', { name: 'Redact session' }).click();
    await page.getByText('Session redacted').waitFor(WAIT);
    assert.match(await page.locator('#session-json').innerText(), /"redacted": true/);

    await page.getByRole('link', { name: 'Audit log' }).click();
    const audit = await page.locator('tbody').innerText();
    for (const action of [
      'member.join',
      'passkey.register',
      'key.create',
      'webhook.create',
      'delivery.retry',
      'session.redact',
    ])
      assert.ok(audit.includes(action), `audited: ${action}`);
    await check(page, 'audit');
    assert.deepEqual(watch.consoleErrors, []);
    assert.deepEqual(watch.cspViolations, []);
  });
});
