import { html, type SafeHtml } from '../portal/html.ts';
import { dashboardPage, notice, publicPage, type PageContext } from './layout.ts';
import { MIN_PASSWORD_LENGTH } from '../domain/members.ts';

/** Sign-in: e-mail and password, or a passkey. */
export function signInPage(options: { signInCsrf: string; error?: string; email?: string }): SafeHtml {
  return publicPage(
    'Sign in',
    html`<section class="card" aria-labelledby="sign-in-heading">
  <h1 id="sign-in-heading">Sign in to the dashboard</h1>
  ${notice(options.error, 'error')}
  <form method="post" action="/dashboard/sign-in">
    <input type="hidden" name="_csrf" value="${options.signInCsrf}">
    <div class="field"><label for="email">E-mail address</label>
      <input id="email" name="email" type="email" autocomplete="username webauthn" required value="${options.email ?? ''}"></div>
    <div class="field"><label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required></div>
    <div class="actions"><button class="button button-primary" type="submit">Sign in</button></div>
  </form>
  <h2>Or with a passkey</h2>
  <div class="actions"><button class="button button-secondary" type="button" id="passkey-sign-in">Sign in with a passkey</button></div>
  <p class="notice notice-error" id="passkey-status" role="alert" hidden></p>
  <p class="hint">No account? Members are invited by an owner of their organization, or by the operator.</p>
</section>`,
  );
}

/** The page behind an invitation link: choose a password to join. */
export function invitationPage(options: { email: string; role: string; error?: string }): SafeHtml {
  return publicPage(
    'Join your organization',
    html`<section class="card" aria-labelledby="join-heading">
  <h1 id="join-heading">Join as ${options.role}</h1>
  <p>Choose a password for <strong>${options.email}</strong>. You can add a passkey once signed in.</p>
  ${notice(options.error, 'error')}
  <form method="post">
    <div class="field"><label for="password">New password (at least ${MIN_PASSWORD_LENGTH} characters)</label>
      <input id="password" name="password" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required></div>
    <div class="actions"><button class="button button-primary" type="submit">Join</button></div>
  </form>
</section>`,
  );
}

/** The member's own page: role, passkeys. */
export function accountPage(ctx: PageContext, passkeys: number, message?: string): SafeHtml {
  const { member } = ctx.session;
  return dashboardPage(
    ctx,
    'account',
    'Your account',
    html`<h1>Your account</h1>
${notice(message)}
<section class="card" aria-labelledby="passkeys-heading">
  <h2 id="passkeys-heading">Passkeys</h2>
  <p>${member.email}, ${member.role}. Passkeys registered: <strong id="passkey-count">${passkeys}</strong>.</p>
  <div class="actions"><button class="button button-primary" type="button" id="passkey-register">Add a passkey</button></div>
  <p class="notice" id="passkey-status" role="status" hidden></p>
</section>`,
  );
}
