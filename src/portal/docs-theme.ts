import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';
import { findAsset } from './assets.ts';

/**
 * `/docs` (Swagger UI, @fastify/swagger-ui) dressed as part of the service: its title, icon and
 * colours, a top bar that leads home, and a layout that fits a phone. Nothing is fetched from
 * elsewhere; the theme's files are served under /docs/static/theme/.
 */

/**
 * Swagger UI's bundle inserts one `<style>` element of its own as it starts. Allowed by its hash
 * rather than 'unsafe-inline', so that /docs logs no Content-Security-Policy error and still runs
 * no other inline style. A new Swagger UI version may change it: the browser test of /docs fails then.
 */
const SWAGGER_UI_STYLE_HASH = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='";

const DOCS_CSS = `
.swagger-ui .topbar { background: #123a9f; padding: 8px 0; }
.swagger-ui .topbar .wrapper { padding: 0 16px; }
.swagger-ui .topbar a.link { display: inline-flex; align-items: center; gap: 10px; color: #fff; text-decoration: none;
  font: 700 1.15rem/1.2 'DejaVu Sans', system-ui, sans-serif; }
.swagger-ui .topbar a.link::after { content: 'Matricula API'; }
.swagger-ui .topbar a.link img { height: 32px; width: 32px; }
/* One document is served here: the box to explore another URL is noise, and too wide for a phone. */
.swagger-ui .topbar .download-url-wrapper { display: none; }
.swagger-ui .info .title { color: #172033; }
.swagger-ui .btn.authorize, .swagger-ui .btn.execute { border-color: #1a4fd6; }
.swagger-ui .btn.execute { background: #1a4fd6; }
/* A phone: nothing wider than the screen; long paths and tables wrap or scroll in their own box. */
@media (max-width: 40rem) {
  .swagger-ui .wrapper { padding: 0 10px; }
  .swagger-ui .info { margin: 20px 0; }
  .swagger-ui .scheme-container { padding: 12px 0; }
  .swagger-ui .scheme-container .schemes { flex-wrap: wrap; gap: 8px; }
  .swagger-ui .opblock .opblock-summary { flex-wrap: wrap; }
  .swagger-ui .opblock .opblock-summary-path { max-width: 100%; word-break: break-all; flex-shrink: 1; }
  .swagger-ui .opblock .opblock-summary-description { flex-basis: 100%; }
  .swagger-ui .opblock-tag { flex-wrap: wrap; }
  .swagger-ui .opblock-tag small { flex-basis: 100%; padding: 4px 0 0; }
  .swagger-ui table, .swagger-ui .model-box, .swagger-ui .highlight-code, .swagger-ui .microlight {
    display: block; max-width: 100%; overflow-x: auto; }
  .swagger-ui section.models { margin: 20px 0; }
  .swagger-ui .model-container { max-width: 100%; overflow-x: auto; }
}
`;

/** Points the top bar's link home (Swagger UI links it to its own site) and names it. */
const DOCS_JS = `(function () {
  function brand() {
    var link = document.querySelector('.swagger-ui .topbar a.link');
    if (!link) return false;
    link.setAttribute('href', '/');
    link.setAttribute('aria-label', 'Matricula home');
    link.removeAttribute('target');
    return true;
  }
  if (!brand()) {
    new MutationObserver(function (_records, observer) {
      if (brand()) observer.disconnect();
    }).observe(document.documentElement, { childList: true, subtree: true });
  }
})();
`;

/** The options of @fastify/swagger-ui that brand /docs, and its policy's one addition. */
export function docsUiOptions(): FastifySwaggerUiOptions {
  const icon = findAsset('favicon.svg')!.body;
  return {
    logo: { type: 'image/svg+xml', content: icon, href: '/', target: '_self' },
    theme: {
      title: 'API reference · Matricula',
      favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: icon }],
      css: [{ filename: 'matricula.css', content: DOCS_CSS }],
      js: [{ filename: 'matricula.js', content: DOCS_JS }],
    },
    /**
     * Swagger UI's own policy, with its style hash, and without `upgrade-insecure-requests`, which
     * asks browsers to fetch its assets over https and leaves /docs blank when the service is
     * reached over plain http on any host but localhost.
     */
    transformStaticCSP: (header: string) =>
      header
        .replace(/\s*upgrade-insecure-requests;?/g, '')
        .replace(/style-src 'self'/, `style-src 'self' ${SWAGGER_UI_STYLE_HASH}`),
  };
}
