import { ACADEMIC_LEVELS } from '../domain/claims.ts';
import { SANDBOX_UNIVERSITIES } from '../proofs/sandbox-universities.ts';
import type { CredentialFormat } from '../domain/credentials.ts';
import type { SandboxFormats, SandboxPresentationRequest } from '../services/sandbox-wallet.ts';
import { html, type SafeHtml } from './html.ts';
import { ICONS } from './icons.ts';
import { layout } from './layout.ts';
import { claimsInWords } from './words.ts';

/**
 * The sandbox web wallet (`/wallet`): a tester answers a sandbox session in a browser, as a
 * student would from a phone. wallet.js posts the answer through the public wallet endpoints.
 */

/** How each format is described to the tester; a format added to the service shows by its name until described here. */
const FORMAT_WORDS: Partial<Record<CredentialFormat, string>> = {
  'sd-jwt-vc': 'A signed credential that reveals only the requested claims.',
  'jwt-vc': 'A W3C Verifiable Credential, signed as a JWT; it shows every claim it holds.',
  bbs: 'A zero-knowledge proof over a signed credential; two answers cannot be linked.',
  groth16: 'A zero-knowledge proof that the credential is valid, without revealing its dates. Takes a few seconds.',
};

const START_TEXT =
  'Try the whole verification in a browser, without a phone. Use “Open in sandbox wallet” on a sandbox session’s portal page, or paste the qrPayload of a sandbox session below.';

/** The start page: paste a qrPayload. `error` explains why a pasted one was not accepted. */
export function walletStartPage(options: { appScheme: string; payload?: string; error?: string }): SafeHtml {
  const invalid = options.error !== undefined;
  const main = html`<section class="card narrow" aria-labelledby="wallet-heading">
  <p class="eyebrow">Sandbox wallet</p>
  <h1 id="wallet-heading">Answer a sandbox verification</h1>
  <p>${START_TEXT}</p>
  <form class="stack" method="get" action="/wallet">
    <div class="field">
      <label for="payload">QR payload</label>
      <input id="payload" name="payload" type="text" required autocomplete="off" spellcheck="false" value="${options.payload ?? ''}"
        placeholder="${options.appScheme}://verify?session=…&nonce=…" aria-describedby="payload-hint${invalid ? ' payload-error' : ''}"${invalid ? html` aria-invalid="true" autofocus` : ''}>
      <p class="hint" id="payload-hint">The <code>qrPayload</code> field of the session, as the API returned it.</p>
      ${invalid ? html`<p class="field-error" id="payload-error">${options.error}</p>` : ''}
    </div>
    <div class="actions"><button class="button button-primary" type="submit">Open</button></div>
  </form>
</section>`;
  return layout({ title: 'Sandbox wallet', main, sandbox: true });
}

function radio(name: string, value: string, label: string, checked: boolean, hint?: string): SafeHtml {
  const id = `${name}-${value}`;
  return html`<div class="choice">
      <input type="radio" id="${id}" name="${name}" value="${value}"${checked ? html` checked` : ''}${hint ? html` aria-describedby="${id}-hint"` : ''}>
      <label for="${id}">${label}</label>
      ${hint ? html`<p class="hint" id="${id}-hint">${hint}</p>` : ''}
    </div>`;
}

function studentFields(): SafeHtml {
  return html`<fieldset class="group">
    <legend>Sandbox student</legend>
    <div class="field">
      <label for="university">University</label>
      <select id="university" name="university">${SANDBOX_UNIVERSITIES.map((u) => html`<option value="${u.domain}">${u.name} (${u.country})</option>`)}</select>
    </div>
    <div class="field">
      <label for="academic-level">Level of study</label>
      <select id="academic-level" name="academicLevel">${Object.keys(ACADEMIC_LEVELS).map((level) => html`<option value="${level}">${level[0]!.toUpperCase() + level.slice(1)}</option>`)}</select>
    </div>
    <fieldset class="choices">
      <legend>Enrolment</legend>
      ${radio('active', 'true', 'Active student', true)}
      ${radio('active', 'false', 'No longer enrolled', false)}
    </fieldset>
    <fieldset class="choices">
      <legend>Credential</legend>
      ${radio('expired', 'false', 'Valid for another year', true)}
      ${radio('expired', 'true', 'Expired yesterday', false)}
    </fieldset>
  </fieldset>`;
}

/** The formats to pick from, and a line for each accepted format this installation cannot build. */
function formatFields(formats: SandboxFormats): SafeHtml {
  return html`<fieldset class="group choices">
    <legend>Format</legend>
    ${formats.offered.map((format, i) => radio('format', format, format, i === 0, FORMAT_WORDS[format]))}
    ${formats.unavailable.map(({ reason }) => html`<p class="hint format-unavailable">${reason}</p>`)}
  </fieldset>`;
}

function outcomePanels(app: string, sessionId: string): SafeHtml {
  const back = html`<p><a class="button button-secondary" href="/verify/${sessionId}">Open the portal page</a></p>`;
  return html`<section class="card outcome" id="outcome" aria-label="Outcome" hidden>
    <div class="final final-success" data-outcome="verified" hidden>${ICONS.check}<h2 class="final-heading" tabindex="-1">Verified</h2><p>${app} was told you are an active student.</p>${back}</div>
    <div class="final final-failure" data-outcome="not_verified" hidden>${ICONS.cross}<h2 class="final-heading" tabindex="-1">Not verified</h2><p data-slot="reason"></p>${back}</div>
    <div class="final final-neutral" data-outcome="declined" hidden>${ICONS.hand}<h2 class="final-heading" tabindex="-1">You declined</h2><p>Nothing was shared with ${app}.</p>${back}</div>
  </section>`;
}

/** The answer page: what the application asks and why, the student and format to answer with, approve or decline. */
export function walletAnswerPage(request: SandboxPresentationRequest, formats: SandboxFormats): SafeHtml {
  const app = request.application.name || 'This service';
  const main = html`<div class="wallet" id="wallet" data-session-id="${request.sessionId}" data-nonce="${request.nonce}" data-status="${request.status}">
  <section class="card request" aria-labelledby="wallet-heading">
    <p class="eyebrow">Sandbox wallet</p>
    <h1 id="wallet-heading">${app} asks you to share</h1>
    <ul class="claims">${claimsInWords(request.requiredClaims).map((words) => html`<li>${words}</li>`)}</ul>
    <p class="purpose"><strong>Why:</strong> ${request.purpose}</p>
    <p class="fine">Session <code>${request.sessionId}</code>. Sandbox credentials are signed with published test keys: they prove nothing about a real person.</p>
  </section>
  <form class="card stack" id="answer" aria-labelledby="answer-heading" novalidate>
    <h2 id="answer-heading">Your answer</h2>
    ${studentFields()}
    ${formatFields(formats)}
    <div class="alert" id="wallet-error" role="alert" hidden></div>
    <p class="progress" id="progress" role="status" aria-live="polite"></p>
    <div class="actions">
      <button class="button button-primary" type="submit" id="approve"${formats.offered.length === 0 ? html` disabled data-unavailable="true"` : ''}>Approve and share</button>
      <button class="button button-secondary" type="button" id="decline">Decline</button>
    </div>
    <noscript><p class="alert">The sandbox wallet needs JavaScript to answer.</p></noscript>
  </form>
  ${outcomePanels(app, request.sessionId)}
</div>`;
  return layout({ title: `Sandbox wallet: ${app}`, main, script: 'wallet.js', sandbox: true });
}
