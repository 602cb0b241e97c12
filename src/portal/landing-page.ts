import { html, type SafeHtml } from './html.ts';
import { layout } from './layout.ts';

/**
 * `GET /`: what someone who just started the service (or followed a link to it) needs next. The
 * commands are the README's first steps, so a newcomer can go from here without the repository open.
 */
export function landingPage(): SafeHtml {
  const main = html`<section class="card stack" aria-labelledby="landing-heading">
    <p class="eyebrow">Self-hosted student verification</p>
    <h1 id="landing-heading">Matricula is running</h1>
    <p>
      A business creates a verification session and shows its QR code; a student answers from a wallet with a signed
      student credential or a zero-knowledge proof; the business learns only that the student is active at a trusted
      university.
    </p>
    <h2>Where to go</h2>
    <ul>
      <li><a href="/docs">API reference</a> (the OpenAPI document is at <a href="/openapi.json">/openapi.json</a>)</li>
      <li><a href="/wallet">Sandbox wallet</a>: answer a sandbox session in the browser, without a phone</li>
      <li><a href="/healthz">/healthz</a> and <a href="/readyz">/readyz</a>: health checks</li>
    </ul>
    <h2>First steps</h2>
    <p>From the repository, with the service running (the README walks through the rest):</p>
    <pre tabindex="0"><code>./bin/matricula org create --name "Acme Books"    # prints an API key once
KEY=sk_test_…
curl -s $BASE_URL/org/v1/apps -H "Authorization: Bearer $KEY"
curl -s $BASE_URL/verification/v1/sessions -H "Authorization: Bearer $KEY" \\
  -H 'Content-Type: application/json' \\
  -d '{"appId": "app_…", "purpose": "Student discount", "requiredClaims": ["is_active_student"]}'</code></pre>
    <p>
      Open the session's <code>verificationUrl</code> in a browser and press <strong>Open in sandbox wallet</strong>, or
      answer it with <code>./bin/matricula wallet present --qr "$QR"</code>.
    </p>
  </section>`;
  return layout({ title: 'Welcome', main });
}
