import type { FastifyReply } from 'fastify';
import { assetUrl, type AssetName } from './assets.ts';
import { html, type SafeHtml } from './html.ts';

/**
 * Every page's policy: only the service's own scripts, styles and connections; no inline script
 * or style (so injected markup could not run or restyle anything), no framing (clickjacking of
 * the consent page), no plug-ins, no <base> rewriting, forms post only to us.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export interface PageOptions {
  title: string;
  main: SafeHtml;
  /** The page's script (or scripts), if it has one. */
  script?: Extract<AssetName, `${string}.js`> | Array<Extract<AssetName, `${string}.js`>>;
  /** Marks the page as sandbox (test credentials, no real students). */
  sandbox?: boolean;
}

/** The document around a page's `<main>`: landmarks, skip link, the stylesheet and the page's script. */
export function layout(options: PageOptions): SafeHtml {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${options.title} · Matricula</title>
<link rel="icon" href="${assetUrl('favicon.svg')}" type="image/svg+xml">
<link rel="stylesheet" href="${assetUrl('site.css')}">
${[options.script ?? []].flat().map((script) => html`<script src="${assetUrl(script)}" defer></script>`)}
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
<header class="site-header">
  <span class="brand"><svg class="brand-mark" viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M12 3 1 9l11 6 9-4.9V17h2V9L12 3Zm-7 9.2v4L12 20l7-3.8v-4L12 16l-7-3.8Z" fill="currentColor"/></svg>Matricula</span>
  ${options.sandbox ? html`<span class="badge badge-sandbox">Sandbox</span>` : ''}
</header>
<main id="main" tabindex="-1">
${options.main}
</main>
<footer class="site-footer"><p>Student verification by Matricula. Your wallet shares only what this page lists.</p></footer>
</body>
</html>
`;
}

/**
 * Sends a page with the headers every page carries. Pages hold a session's nonce (in the QR
 * code, in the wallet's answer), so they are never cached and never leak a Referer. No page may be
 * framed, except by the origins `frameAncestors` names (the portal page, in the drop-in's modal, by
 * its application's allowed origins: validated origins, so nothing else reaches the header).
 */
export function sendPage(
  reply: FastifyReply,
  status: number,
  page: SafeHtml,
  options: {
    frameAncestors?: readonly string[];
    referrerPolicy?: 'no-referrer' | 'same-origin';
    /** The page may ask a wallet through the browser's Digital Credentials API (the portal page only). */
    digitalCredentials?: boolean;
  } = {},
): FastifyReply {
  const ancestors = options.frameAncestors ?? [];
  const csp =
    ancestors.length === 0
      ? PAGE_CSP
      : PAGE_CSP.replace("frame-ancestors 'none'", `frame-ancestors ${ancestors.join(' ')}`);
  // X-Frame-Options cannot name several origins; browsers that know frame-ancestors ignore it anyway.
  if (ancestors.length === 0) reply.header('x-frame-options', 'DENY');
  return (
    reply
      .status(status)
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-security-policy', csp)
      // Only the portal page, in its own top-level document, may call navigator.credentials.get({digital});
      // no page delegates it to a frame.
      .header('permissions-policy', `digital-credentials-get=(${options.digitalCredentials ? 'self' : ''})`)
      .header('cache-control', 'no-store')
      .header('referrer-policy', options.referrerPolicy ?? 'no-referrer')
      .header('x-content-type-options', 'nosniff')
      .send(page.value)
  );
}
