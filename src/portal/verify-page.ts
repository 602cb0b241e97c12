import { isTerminal } from '../domain/session-state.ts';
import type { PortalSession } from '../services/portal.ts';
import { html, type SafeHtml } from './html.ts';
import { ICONS } from './icons.ts';
import { layout, type PageOptions } from './layout.ts';
import { qrSvg } from './qr.ts';
import { universityLoginOption } from './university-login.ts';
import { claimsInWords } from './words.ts';

/**
 * The portal page (`/verify/{sessionId}`): what a kiosk or a checkout shows the student. It is
 * rendered whole on the server; verify.js only follows the session (a long poll of the public
 * status endpoint) and switches between the panels rendered here, so every text lives in this file.
 */

/**
 * The page holds one status request open at a time, which the server answers on a change or after
 * this many seconds (docs/portal.md); below the 60 s idle timeout of common proxies.
 */
export const STATUS_WAIT_SECONDS = 25;

/** The least time between two of the page's status requests, whatever the answers. */
export const POLL_INTERVAL_MS = 1500;

/** What the page shows: the open states, and one final screen per way a session ends. */
export type PortalPanel = 'pending' | 'consented' | 'verified' | 'not_verified' | 'expired' | 'cancelled' | 'declined';

export function panelOf(status: PortalSession['status'], verified: boolean | null): PortalPanel {
  return status === 'completed' ? (verified ? 'verified' : 'not_verified') : status;
}

interface FinalScreen {
  tone: 'success' | 'failure' | 'neutral';
  icon: SafeHtml;
  heading: string;
  text: (app: string) => string;
}

const FINAL_SCREENS: Record<Exclude<PortalPanel, 'pending' | 'consented'>, FinalScreen> = {
  verified: {
    tone: 'success',
    icon: ICONS.check,
    heading: 'Verified',
    text: (app) => `${app} now knows you are an active student. You can put your phone away.`,
  },
  not_verified: {
    tone: 'failure',
    icon: ICONS.cross,
    heading: 'Not verified',
    text: () =>
      'Your wallet’s answer did not show an active student with a current credential. Your wallet tells you why. Ask for a new code to try again.',
  },
  expired: {
    tone: 'neutral',
    icon: ICONS.clock,
    heading: 'This code has expired',
    text: () => 'Nothing was shared. Ask for a new code to try again.',
  },
  cancelled: {
    tone: 'neutral',
    icon: ICONS.stop,
    heading: 'Verification cancelled',
    text: (app) => `${app} cancelled this request. Nothing was shared.`,
  },
  declined: {
    tone: 'neutral',
    icon: ICONS.hand,
    heading: 'You declined',
    text: (app) => `Nothing was shared with ${app}.`,
  },
};

function minutesSeconds(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(total / 60)}:${String(total % 60).padStart(2, '0')}`;
}

function panelAttributes(panel: PortalPanel, current: PortalPanel): SafeHtml {
  return html`data-panel="${panel}"${panel === current ? '' : html` hidden`}`;
}

function finalPanels(s: PortalSession, current: PortalPanel): SafeHtml[] {
  const names = (Object.keys(FINAL_SCREENS) as Array<keyof typeof FINAL_SCREENS>).filter(
    (name) => !isTerminal(s.status) || name === current,
  );
  return names.map((name) => {
    const screen = FINAL_SCREENS[name];
    return html`<div class="final final-${screen.tone}" ${panelAttributes(name, current)} data-title="${screen.heading}">
      ${screen.icon}
      <h2 class="final-heading" tabindex="-1">${screen.heading}</h2>
      <p>${screen.text(s.applicationName)}</p>
    </div>`;
  });
}

async function openPanels(s: PortalSession, current: PortalPanel): Promise<SafeHtml> {
  const qr = await qrSvg(s.qrPayload, `QR code to answer ${s.applicationName}’s request with your student wallet`);
  const oid4vpQr = await qrSvg(
    s.openid4vpUri,
    `QR code to answer ${s.applicationName}’s request with an EU or other OpenID4VP wallet`,
  );
  const walletLink = `/wallet?payload=${encodeURIComponent(s.qrPayload)}`;
  // The switch is two radio buttons and CSS (:has), so it works without JavaScript.
  return html`<div class="scan" ${panelAttributes('pending', current)} data-title="Scan to verify">
      ${dcApiOption(s)}
      <h2 id="scan-heading">Scan with your student wallet</h2>
      <div class="wallet-switch" role="radiogroup" aria-label="Which wallet do you use?">
        <input type="radio" name="wallet" id="wallet-matricula" value="matricula" checked>
        <label for="wallet-matricula">Student wallet</label>
        <input type="radio" name="wallet" id="wallet-openid4vp" value="openid4vp">
        <label for="wallet-openid4vp">EU / OpenID4VP wallet</label>
      </div>
      <div class="wallet-option" data-wallet="matricula">
        <div class="qr-frame">${qr}</div>
        <div class="actions">
          <a class="button button-primary" href="${s.qrPayload}">Open in wallet</a>
          ${s.environment === 'sandbox' ? html`<a class="button button-secondary" href="${walletLink}" target="_blank" rel="noopener">Open in sandbox wallet</a>` : ''}
        </div>
        <p class="hint">Reading this on your phone? Tap “Open in wallet” instead of scanning.</p>
      </div>
      <div class="wallet-option" data-wallet="openid4vp">
        <div class="qr-frame">${oid4vpQr}</div>
        <div class="actions">
          <a class="button button-primary" href="${s.openid4vpSameDeviceUri}">Open in EU wallet</a>
        </div>
        <p class="hint">For wallets that speak OpenID for Verifiable Presentations (EU Digital Identity Wallets and others). On your phone, tap “Open in EU wallet”: it brings you back here.</p>
      </div>
      ${universityLoginOption({ sessionId: s.sessionId, nonce: new URL(s.qrPayload).searchParams.get('nonce') ?? '', environment: s.environment })}
    </div>
    <div class="waiting" ${panelAttributes('consented', current)} data-title="Approved in your wallet">
      ${ICONS.wait}
      <h2 class="final-heading" tabindex="-1">Approved in your wallet</h2>
      <p>Checking the proof your wallet sends. This takes a few seconds.</p>
    </div>
    <p class="hint dc-api-status" id="dc-api-status" role="status" data-open hidden></p>
    <p class="countdown" data-open>Code expires in <span id="countdown" role="timer">${minutesSeconds(Date.parse(s.expiresAt) - Date.parse(s.now))}</span></p>
    <p class="connection" id="connection" role="alert" hidden>Connection lost. Trying again…</p>`;
}

/**
 * "Use a wallet on this device": the browser's Digital Credentials API (dc-api.js shows it only
 * where `DigitalCredential` exists and the page may use it). Hidden without JavaScript; the QR
 * codes and links below stay for every other browser.
 */
function dcApiOption(s: PortalSession): SafeHtml {
  return html`<div class="dc-api" id="dc-api" data-request-path="${s.dcApi.requestPath}" data-response-path="${s.dcApi.responsePath}" hidden>
        <div class="actions"><button type="button" class="button button-primary" id="dc-api-button">Use a wallet on this device</button></div>
        <p class="hint">Your browser asks a wallet on this device. Or scan a code below.</p>
      </div>`;
}

/** Seconds the final screen stays before the page sends the student back to the business's returnUrl. */
export const RETURN_DELAY_MS = 3000;

/** The link back to the business (its returnUrl with the session id), shown once the session ended. */
function returnLink(s: PortalSession, open: boolean): SafeHtml | '' {
  if (!s.returnTo) return '';
  return html`<p class="actions return-link" data-final${open ? html` hidden` : ''}><a class="button button-primary" href="${s.returnTo}">Back to ${s.applicationName}</a></p>`;
}

/**
 * The whole portal page for a session. `embedOrigin`: the page is in the drop-in's modal on that
 * origin (one the application allows), which it tells how the session ended instead of leaving.
 */
export async function verifyPage(s: PortalSession, options: { embedOrigin?: string | null } = {}): Promise<SafeHtml> {
  const current = panelOf(s.status, s.verified);
  const open = !isTerminal(s.status);
  const claims = claimsInWords(s.requiredClaims);
  const embedOrigin = options.embedOrigin ?? null;
  const returnTo = embedOrigin ? null : s.returnTo;
  const main = html`<div class="portal" id="portal" data-session-id="${s.sessionId}" data-current="${current}" data-expires-at="${s.expiresAt}" data-server-now="${s.now}" data-poll-ms="${POLL_INTERVAL_MS}" data-wait-seconds="${STATUS_WAIT_SECONDS}"${returnTo ? html` data-return-to="${returnTo}" data-return-delay-ms="${RETURN_DELAY_MS}"` : ''}${embedOrigin ? html` data-embed-origin="${embedOrigin}"` : ''}>
  <section class="card request" aria-labelledby="request-heading">
    <p class="eyebrow">Student verification</p>
    <h1 id="request-heading">${s.applicationName} asks you to confirm you are a student</h1>
    <p class="purpose"><strong>Why:</strong> ${s.purpose}</p>
    <h2 class="subheading">What ${s.applicationName} will learn</h2>
    <ul class="claims">${claims.map((words) => html`<li>${words}</li>`)}</ul>
    <p class="fine">Nothing else about you is shared: not your name, not your student number.</p>
  </section>
  <section class="card action" aria-label="Verification status">
    ${open ? await openPanels(s, current) : ''}
    ${finalPanels(s, current)}
    ${returnLink({ ...s, returnTo }, open)}
  </section>
  <p class="visually-hidden" id="announcer" role="status" aria-live="polite"></p>
</div>`;
  const title =
    current === 'pending'
      ? `Verify for ${s.applicationName}`
      : (FINAL_SCREENS[current as keyof typeof FINAL_SCREENS]?.heading ?? 'Approved in your wallet');
  // An ended session needs verify.js only to send the student back, or to tell the drop-in.
  const script: PageOptions['script'] = open
    ? ['verify.js', 'university-login.js', 'dc-api.js']
    : returnTo || embedOrigin
      ? 'verify.js'
      : undefined;
  return layout({ title, main, script, sandbox: s.environment === 'sandbox' });
}
