import { assetUrl } from '../portal/assets.ts';
import { html, type SafeHtml } from '../portal/html.ts';
import type { DashboardSession } from '../store/dashboard-sessions.ts';

/** What every signed-in page knows: the member's session and the CSRF token its forms carry. */
export interface PageContext {
  session: DashboardSession;
  csrf: string;
}

const SECTIONS = [
  ['apps', 'Applications', '/dashboard/apps'],
  ['sessions', 'Sessions', '/dashboard/sessions'],
  ['events', 'Events', '/dashboard/events'],
  ['members', 'Members', '/dashboard/members'],
  ['audit', 'Audit log', '/dashboard/audit'],
] as const;
export type Section = (typeof SECTIONS)[number][0] | 'account';

/** The hidden field every form posts: the session's CSRF token (checked on the server). */
export function csrfField(csrf: string): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${csrf}">`;
}

function document(title: string, body: SafeHtml, csrf?: string): SafeHtml {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
${csrf ? html`<meta name="csrf-token" content="${csrf}">` : ''}
<title>${title} · Matricula dashboard</title>
<link rel="icon" href="${assetUrl('favicon.svg')}" type="image/svg+xml">
<link rel="stylesheet" href="${assetUrl('site.css')}">
<link rel="stylesheet" href="${assetUrl('dashboard.css')}">
<script src="${assetUrl('dashboard.js')}" defer></script>
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
${body}
</body>
</html>
`;
}

/** A page for a member who is signed in: navigation, the sandbox/live switch, sign-out. */
export function dashboardPage(ctx: PageContext, section: Section, title: string, main: SafeHtml): SafeHtml {
  const { session, csrf } = ctx;
  const env = session.environment;
  const body = html`<header class="site-header">
  <span class="brand">Matricula</span>
  ${env === 'sandbox' ? html`<span class="badge badge-sandbox">Sandbox</span>` : html`<span class="badge">Live</span>`}
</header>
<nav class="dash-nav" aria-label="Dashboard">
  ${SECTIONS.map(([key, label, href]) => html`<a href="${href}"${key === section ? html` aria-current="page"` : ''}>${label}</a>`)}
  <span class="spacer"></span>
  <form method="post" action="/dashboard/environment">${csrfField(csrf)}
    <label for="environment-switch">Environment</label>
    <select id="environment-switch" name="environment">
      <option value="sandbox"${env === 'sandbox' ? html` selected` : ''}>Sandbox</option>
      <option value="live"${env === 'live' ? html` selected` : ''}>Live</option>
    </select>
    <button class="button button-secondary" type="submit">Switch</button>
  </form>
  <a href="/dashboard/account"${section === 'account' ? html` aria-current="page"` : ''}>${session.member.email} (${session.member.role})</a>
  <form method="post" action="/dashboard/sign-out">${csrfField(csrf)}<button class="button button-secondary" type="submit">Sign out</button></form>
</nav>
<main id="main" tabindex="-1"><div class="dash">
${main}
</div></main>`;
  return document(title, body, csrf);
}

/** A page for someone not signed in (sign-in, invitation). */
export function publicPage(title: string, main: SafeHtml): SafeHtml {
  const body = html`<header class="site-header"><span class="brand">Matricula</span></header>
<main id="main" tabindex="-1"><div class="dash narrow">
${main}
</div></main>`;
  return document(title, body);
}

/** A notice at the top of a page: what just happened, or what went wrong. */
export function notice(text: string | undefined, kind: 'info' | 'error' = 'info'): SafeHtml | '' {
  if (!text) return '';
  return kind === 'error'
    ? html`<p class="notice notice-error" role="alert">${text}</p>`
    : html`<p class="notice" role="status">${text}</p>`;
}
