import type { Delivery } from '../store/webhook-deliveries/read-model.ts';
import { html, type SafeHtml } from '../portal/html.ts';
import { nextPageLink } from './app-pages.ts';
import { csrfField, dashboardPage, notice, type PageContext } from './layout.ts';

interface Endpoint {
  id: string;
  appId: string;
  url: string;
  events: string[];
  enabled: boolean;
  disabledReason: string | null;
}

function attempts(d: Delivery): SafeHtml {
  if (d.attempts.length === 0) return html`<p class="hint">No attempt yet.</p>`;
  return html`<ol>${d.attempts.map(
    (a) => html`<li>${a.startedAt}: ${a.statusCode ?? a.outcome}, ${a.durationMs} ms
      ${a.responseBody ? html`<pre class="excerpt" tabindex="0" aria-label="Response excerpt">${a.responseBody}${a.responseBodyTruncated ? '…' : ''}</pre>` : ''}</li>`,
  )}</ol>`;
}

export function endpointPage(
  ctx: PageContext,
  e: Endpoint,
  deliveries: Delivery[],
  nextCursor: string | null,
  message?: string,
): SafeHtml {
  const form = (action: string, label: string, extra: SafeHtml | '' = '') =>
    html`<form method="post" action="/dashboard/webhooks/${e.id}/${action}" class="inline">${csrfField(ctx.csrf)}${extra}<button class="button button-secondary" type="submit">${label}</button></form>`;
  return dashboardPage(
    ctx,
    'apps',
    `Endpoint ${e.url}`,
    html`<h1>Webhook endpoint</h1>
${notice(message)}
<p><code>${e.url}</code> · ${e.events.join(', ')} · ${e.enabled ? 'enabled' : `disabled (${e.disabledReason ?? 'manual'})`} · <a href="/dashboard/apps/${e.appId}">application</a></p>
<div class="actions">${form('test', 'Send test event')} ${form('rotate-secret', 'Rotate signing secret')}</div>
<section class="card" aria-labelledby="replay-heading"><h2 id="replay-heading">Replay failed deliveries</h2>
<form method="post" action="/dashboard/webhooks/${e.id}/replay">${csrfField(ctx.csrf)}
<div class="field"><label for="since">Failed since (UTC)</label><input id="since" name="since" type="datetime-local" required></div>
<div class="actions"><button class="button button-secondary" type="submit">Replay failed deliveries</button></div></form></section>
<section class="card" aria-labelledby="deliveries-heading"><h2 id="deliveries-heading">Deliveries</h2>
${
  deliveries.length === 0
    ? html`<p>No delivery yet.</p>`
    : html`<div class="table-wrap"><table><caption class="visually-hidden">Deliveries, newest first</caption>
<thead><tr><th scope="col">Delivery</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${deliveries.map(
        (
          d,
        ) => html`<tr><td><code>${d.id}</code></td><td>${d.event}</td><td class="delivery-status">${d.status}</td><td>${attempts(d)}</td>
<td><form method="post" action="/dashboard/webhooks/${e.id}/deliveries/${d.id}/retry" class="inline">${csrfField(ctx.csrf)}<button class="button button-secondary" type="submit">Retry<span class="visually-hidden"> ${d.id}</span></button></form></td></tr>`,
      )}</tbody></table></div>`
}
${nextPageLink(`/dashboard/webhooks/${e.id}`, nextCursor)}
</section>`,
  );
}
