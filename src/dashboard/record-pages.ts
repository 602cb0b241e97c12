import { SESSION_STATUSES } from '../domain/session-state.ts';
import { html, type SafeHtml } from '../portal/html.ts';
import { nextPageLink } from './app-pages.ts';
import { csrfField, dashboardPage, notice, type PageContext } from './layout.ts';

interface SessionRow {
  sessionId: string;
  appId: string;
  status: string;
  purpose: string;
  createdAt: string;
  redacted: boolean;
  result?: unknown;
}

export function sessionsPage(
  ctx: PageContext,
  sessions: SessionRow[],
  status: string,
  nextCursor: string | null,
): SafeHtml {
  const base = status ? `/dashboard/sessions?status=${status}` : '/dashboard/sessions';
  return dashboardPage(
    ctx,
    'sessions',
    'Sessions',
    html`<h1>Sessions (${ctx.session.environment})</h1>
<form method="get" action="/dashboard/sessions" class="actions">
  <label for="status-filter">Status</label>
  <select id="status-filter" name="status"><option value="">Any</option>${SESSION_STATUSES.map((s) => html`<option value="${s}"${s === status ? html` selected` : ''}>${s}</option>`)}</select>
  <button class="button button-secondary" type="submit">Filter</button>
</form>
<div class="table-wrap"><table><caption class="visually-hidden">Sessions, newest first</caption>
<thead><tr><th scope="col">Session</th><th scope="col">Status</th><th scope="col">Purpose</th><th scope="col">Created</th></tr></thead>
<tbody>${sessions.map((s) => html`<tr><td><a href="/dashboard/sessions/${s.sessionId}">${s.sessionId}</a></td><td>${s.status}${s.redacted ? ' (redacted)' : ''}</td><td>${s.purpose}</td><td>${s.createdAt}</td></tr>`)}</tbody></table></div>
${nextPageLink(base, nextCursor)}`,
  );
}

export function sessionPage(ctx: PageContext, s: SessionRow & Record<string, unknown>, message?: string): SafeHtml {
  return dashboardPage(
    ctx,
    'sessions',
    `Session ${s.sessionId}`,
    html`<h1>Session</h1>
${notice(message)}
<p><code>${s.sessionId}</code> · <strong id="session-status">${s.status}</strong>${s.redacted ? ' · redacted' : ''} · <a href="/dashboard/apps/${s.appId}">application</a></p>
<section class="card" aria-labelledby="session-data-heading"><h2 id="session-data-heading">What the API returns</h2>
<pre class="excerpt" id="session-json" tabindex="0" aria-label="Session as JSON">${JSON.stringify({ ...s, challengeNonce: undefined, qrPayload: undefined, openid4vpUri: undefined }, null, 2)}</pre></section>
<form method="post" action="/dashboard/sessions/${s.sessionId}/redact">${csrfField(ctx.csrf)}
<p>Redacting erases the result's claims and university, metadata, clientReference and returnUrl, here and in the stored events.</p>
<div class="actions"><button class="button button-primary" type="submit">Redact session</button></div></form>`,
  );
}

interface EventRow {
  id: string;
  event: string;
  appId: string;
  createdAt: string;
  data?: unknown;
}

export function eventsPage(ctx: PageContext, events: EventRow[], nextCursor: string | null): SafeHtml {
  return dashboardPage(
    ctx,
    'events',
    'Events',
    html`<h1>Events (${ctx.session.environment})</h1>
<div class="table-wrap"><table><caption class="visually-hidden">Events, newest first</caption>
<thead><tr><th scope="col">Event</th><th scope="col">Type</th><th scope="col">Created</th></tr></thead>
<tbody>${events.map((e) => html`<tr><td><a href="/dashboard/events/${e.id}">${e.id}</a></td><td>${e.event}</td><td>${e.createdAt}</td></tr>`)}</tbody></table></div>
${nextPageLink('/dashboard/events', nextCursor)}`,
  );
}

export function eventPage(ctx: PageContext, e: EventRow): SafeHtml {
  return dashboardPage(
    ctx,
    'events',
    `Event ${e.id}`,
    html`<h1>Event ${e.event}</h1><p><code>${e.id}</code> · ${e.createdAt}</p><pre class="excerpt" tabindex="0" aria-label="Event data">${JSON.stringify(e.data, null, 2)}</pre>`,
  );
}

interface MemberRow {
  id: string;
  email: string;
  role: string;
}

export function membersPage(
  ctx: PageContext,
  members: MemberRow[],
  invitations: Array<{ email: string; role: string; expiresAt: string }>,
  invitedUrl?: string,
): SafeHtml {
  return dashboardPage(
    ctx,
    'members',
    'Members',
    html`<h1>Members</h1>
${invitedUrl ? html`<div class="notice" role="status"><p>Invitation created. Send this link to the person invited (it works once, for 7 days):</p><div class="secret"><code id="invitation-url">${invitedUrl}</code><button class="button button-secondary" type="button" data-copy="invitation-url">Copy</button></div></div>` : ''}
<div class="table-wrap"><table><caption class="visually-hidden">Members</caption>
<thead><tr><th scope="col">E-mail</th><th scope="col">Role</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${members.map((m) => html`<tr><td>${m.email}</td><td>${m.role}</td><td><form method="post" action="/dashboard/members/${m.id}/remove" class="inline">${csrfField(ctx.csrf)}<button class="button button-secondary" type="submit">Remove<span class="visually-hidden"> ${m.email}</span></button></form></td></tr>`)}</tbody></table></div>
${invitations.length ? html`<h2>Open invitations</h2><ul>${invitations.map((i) => html`<li>${i.email} (${i.role}), until ${i.expiresAt}</li>`)}</ul>` : ''}
<section class="card" aria-labelledby="invite-heading"><h2 id="invite-heading">Invite a member</h2>
<form method="post" action="/dashboard/members">${csrfField(ctx.csrf)}
<div class="field"><label for="invite-email">E-mail address</label><input id="invite-email" name="email" type="email" required></div>
<div class="field"><label for="invite-role">Role</label><select id="invite-role" name="role"><option value="viewer">viewer: reads everything</option><option value="developer">developer: also applications, keys, webhooks, redaction</option><option value="owner">owner: also members</option></select></div>
<div class="actions"><button class="button button-primary" type="submit">Invite</button></div></form></section>`,
  );
}

export function auditPage(
  ctx: PageContext,
  entries: Array<{
    createdAt: string;
    actor: string;
    action: string;
    target: string | null;
    environment: string | null;
  }>,
  nextCursor: string | null,
): SafeHtml {
  return dashboardPage(
    ctx,
    'audit',
    'Audit log',
    html`<h1>Audit log</h1>
<div class="table-wrap"><table><caption class="visually-hidden">Every action, newest first</caption>
<thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Action</th><th scope="col">On</th></tr></thead>
<tbody>${entries.map((e) => html`<tr><td>${e.createdAt}</td><td>${e.actor}</td><td>${e.action}</td><td>${e.target ?? ''}${e.environment ? ` (${e.environment})` : ''}</td></tr>`)}</tbody></table></div>
${nextPageLink('/dashboard/audit', nextCursor)}`,
  );
}
