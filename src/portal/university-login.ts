import { html, type SafeHtml } from './html.ts';

/**
 * "Sign in with your university" on the portal page: a search over the identity providers of the
 * session's environment (assets/university-login.js), each leading to the session's login start.
 */
export function universityLoginOption(input: { sessionId: string; nonce: string; environment: string }): SafeHtml {
  const base = `/sso/v1/sessions/${encodeURIComponent(input.sessionId)}`;
  return html`<div class="university-login" data-university-login data-start="${base}/start" data-search="${base}/identity-providers" data-nonce="${input.nonce}" data-environment="${input.environment}">
  <h3 class="subheading" id="university-heading">Or sign in with your university</h3>
  <p class="hint">Your university tells only whether you are a student there. Not your name.</p>
  <p data-last-choice hidden><button class="button button-secondary" type="button"></button></p>
  <label for="idp-search">Find your university</label>
  <input id="idp-search" type="search" autocomplete="off" spellcheck="false" placeholder="Name, domain or country" role="combobox" aria-autocomplete="list" aria-expanded="false" aria-controls="idp-results" aria-describedby="university-heading">
  <ul id="idp-results" class="idp-results" role="listbox" aria-label="Universities"></ul>
  <p id="idp-status" class="hint" role="status" aria-live="polite"></p>
</div>`;
}
