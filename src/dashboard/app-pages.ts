import { EVENT_TYPES } from '../domain/events.ts';
import type { ApplicationMetrics } from '../store/metrics.ts';
import type { FunnelDay } from '../store/funnel.ts';
import { html, type SafeHtml } from '../portal/html.ts';
import { csrfField, dashboardPage, notice, type PageContext } from './layout.ts';

interface AppRow {
  id: string;
  name: string;
  environment: string;
  createdAt: string;
  keyCount: number;
  webhookCount: number;
}

/** A link to the next page of a cursor-paginated list, when there is one. */
export function nextPageLink(base: string, nextCursor: string | null): SafeHtml | '' {
  if (!nextCursor) return '';
  const joiner = base.includes('?') ? '&' : '?';
  return html`<p><a href="${base}${joiner}after=${encodeURIComponent(nextCursor)}">Next page</a></p>`;
}

export function appsPage(ctx: PageContext, apps: AppRow[], nextCursor: string | null): SafeHtml {
  return dashboardPage(
    ctx,
    'apps',
    'Applications',
    html`<h1>Applications (${ctx.session.environment})</h1>
<section class="card" aria-labelledby="apps-heading"><h2 id="apps-heading">Your applications</h2>
${
  apps.length === 0
    ? html`<p>No ${ctx.session.environment} application yet.</p>`
    : html`<div class="table-wrap"><table><caption class="visually-hidden">Applications</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Id</th><th scope="col">Keys</th><th scope="col">Webhooks</th><th scope="col">Created</th></tr></thead>
<tbody>${apps.map((a) => html`<tr><td><a href="/dashboard/apps/${a.id}">${a.name}</a></td><td><code>${a.id}</code></td><td>${a.keyCount}</td><td>${a.webhookCount}</td><td>${a.createdAt}</td></tr>`)}</tbody></table></div>`
}
${nextPageLink('/dashboard/apps', nextCursor)}
</section>
<section class="card" aria-labelledby="create-app-heading"><h2 id="create-app-heading">Create an application</h2>
<form method="post" action="/dashboard/apps">${csrfField(ctx.csrf)}
  <div class="field"><label for="app-name">Name</label><input id="app-name" name="name" type="text" required maxlength="200"></div>
  <div class="field"><label for="app-description">Description (optional)</label><input id="app-description" name="description" type="text" maxlength="2000"></div>
  <div class="actions"><button class="button button-primary" type="submit">Create application</button></div>
</form></section>`,
  );
}

interface AppDetails extends AppRow {
  description: string | null;
  allowedReturnOrigins: string[];
  keys: Array<{ id: string; name: string; keyHint: string; createdAt: string }>;
  metrics: ApplicationMetrics;
}

interface EndpointRow {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
}

function funnelTable(days: FunnelDay[]): SafeHtml {
  return html`<div class="table-wrap"><table><caption>Verification funnel per day (UTC), newest first</caption>
<thead><tr><th scope="col">Day</th><th scope="col">Created</th><th scope="col">Consented</th><th scope="col">Verified</th><th scope="col">Not verified</th></tr></thead>
<tbody>${days.map((d) => html`<tr><td>${d.day}</td><td>${d.created}</td><td>${d.consented}</td><td>${d.verified}</td><td>${d.notVerified}</td></tr>`)}</tbody></table></div>`;
}

export function appPage(ctx: PageContext, app: AppDetails, funnel: FunnelDay[], endpoints: EndpointRow[]): SafeHtml {
  const s = app.metrics.sessions;
  const counts: Array<[string, number]> = [
    ['Sessions', s.total],
    ['Verified', s.verified],
    ['Not verified', s.notVerified],
    ['Open', s.pending + s.consented],
    ['Expired', s.expired],
  ];
  return dashboardPage(
    ctx,
    'apps',
    app.name,
    html`<h1>${app.name}</h1>
<p><code>${app.id}</code> · ${app.environment}${app.description ? html` · ${app.description}` : ''}</p>
<section class="grid" aria-label="Counts">${counts.map(([label, n]) => html`<div class="card"><p class="hint">${label}</p><p class="stat">${n}</p></div>`)}</section>
<section class="card" aria-labelledby="funnel-heading"><h2 id="funnel-heading">Funnel</h2>${funnelTable(funnel)}</section>
<section class="card" aria-labelledby="keys-heading"><h2 id="keys-heading">API keys</h2>
${
  app.keys.length === 0
    ? html`<p>No key yet.</p>`
    : html`<div class="table-wrap"><table><caption class="visually-hidden">API keys</caption><thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${app.keys.map((k) => html`<tr><td>${k.name}</td><td><code>${k.keyHint}</code></td><td>${k.createdAt}</td><td><a href="/dashboard/keys/${k.id}/revoke?app=${app.id}">Revoke ${k.name}</a></td></tr>`)}</tbody></table></div>`
}
<form method="post" action="/dashboard/apps/${app.id}/keys">${csrfField(ctx.csrf)}
  <div class="field"><label for="key-name">New key: the system that uses it</label><input id="key-name" name="name" type="text" required maxlength="200"></div>
  <div class="actions"><button class="button button-primary" type="submit">Create API key</button></div>
</form></section>
<section class="card" aria-labelledby="webhooks-heading"><h2 id="webhooks-heading">Webhook endpoints</h2>
${
  endpoints.length === 0
    ? html`<p>No endpoint yet.</p>`
    : html`<ul>${endpoints.map((e) => html`<li><a href="/dashboard/webhooks/${e.id}">${e.url}</a> (${e.events.join(', ')})${e.enabled ? '' : ' · disabled'}</li>`)}</ul>`
}
<form method="post" action="/dashboard/apps/${app.id}/webhooks">${csrfField(ctx.csrf)}
  <div class="field"><label for="endpoint-url">Endpoint URL</label><input id="endpoint-url" name="url" type="url" required maxlength="2048"></div>
  <fieldset class="choices"><legend>Events</legend>
  ${EVENT_TYPES.filter((t) => t !== 'webhook.test').map((t) => html`<div><input type="checkbox" name="events" value="${t}" id="event-${t}"${t === 'verification.completed' ? html` checked` : ''}> <label for="event-${t}">${t}</label></div>`)}
  </fieldset>
  <div class="actions"><button class="button button-primary" type="submit">Add endpoint</button></div>
</form></section>
<section class="card" aria-labelledby="origins-heading"><h2 id="origins-heading">Return URLs and the drop-in button</h2>
<p>Origins that sessions may send students back to, and the only pages that may show the verification page in the drop-in's modal.</p>
<form method="post" action="/dashboard/apps/${app.id}/origins">${csrfField(ctx.csrf)}
  <div class="field"><label for="origins">Allowed origins, separated by spaces</label><input id="origins" name="origins" type="text" value="${app.allowedReturnOrigins.join(' ')}"></div>
  <div class="actions"><button class="button button-secondary" type="submit">Save origins</button></div>
</form></section>`,
  );
}

/** A secret shown once (a new API key, a webhook signing secret), with a copy button. */
export function secretPage(ctx: PageContext, title: string, secret: string, back: string): SafeHtml {
  return dashboardPage(
    ctx,
    'apps',
    title,
    html`<h1>${title}</h1>
${notice('This secret is shown once: copy it now. Later only its last characters are shown.')}
<div class="secret"><code id="secret-value">${secret}</code><button class="button button-secondary" type="button" data-copy="secret-value">Copy</button></div>
<p><a href="${back}">Done</a></p>`,
  );
}

export function confirmPage(ctx: PageContext, title: string, text: string, action: string, back: string): SafeHtml {
  return dashboardPage(
    ctx,
    'apps',
    title,
    html`<h1>${title}</h1><p>${text}</p>
<form method="post" action="${action}">${csrfField(ctx.csrf)}
<div class="actions"><button class="button button-primary" type="submit">${title}</button> <a class="button button-secondary" href="${back}">Cancel</a></div></form>`,
  );
}
