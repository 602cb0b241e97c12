import { html, type SafeHtml } from './html.ts';
import { layout } from './layout.ts';

/**
 * The sandbox university's login page: two made-up accounts, each a form that posts its signed
 * SAML response to the service provider's ACS (same origin, so the page policy allows it).
 */
export function sandboxIdpPage(input: {
  university: string;
  acsUrl: string;
  relayState: string;
  responses: { student: string; staff: string };
}): SafeHtml {
  const account = (
    label: string,
    hint: string,
    samlResponse: string,
    primary: boolean,
  ) => html`<form method="post" action="${input.acsUrl}">
    <input type="hidden" name="SAMLResponse" value="${samlResponse}">
    <input type="hidden" name="RelayState" value="${input.relayState}">
    <button class="button ${primary ? 'button-primary' : 'button-secondary'}" type="submit">${label}</button>
    <p class="hint">${hint}</p>
  </form>`;
  const main = html`<section class="card" aria-labelledby="idp-heading">
  <p class="eyebrow">Sandbox identity provider</p>
  <h1 id="idp-heading">${input.university}</h1>
  <p>Sign in with a made-up account. The university tells Matricula only your affiliation, never your name.</p>
  ${account('Sign in as a student', 'Releases student@ this university: verified.', input.responses.student, true)}
  ${account('Sign in as staff', 'Releases staff@ this university: not verified (student_inactive).', input.responses.staff, false)}
</section>`;
  return layout({ title: `${input.university} login`, main, sandbox: true });
}
