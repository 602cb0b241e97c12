import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import jsQRModule from 'jsqr';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { startHarness, type DialectName, type Harness, type Tenant } from './harness.ts';
import { loopbackServer } from './server.ts';

/**
 * Browser tests drive Debian's Chromium (`apt-get install -y chromium`; .ci/run installs it)
 * through playwright-core, against the real app listening on a loopback port.
 */
// jsqr is CommonJS with an ES-style default export: under Node's interop the function is `.default`.
const jsQR = jsQRModule.default;

export const CHROMIUM_PATH = '/usr/bin/chromium';
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
export const SCREENSHOT_DIR = join(import.meta.dirname, '..', '..', 'test-output', 'screenshots');
export const PHONE = { width: 375, height: 812 };
export const DESKTOP = { width: 1280, height: 860 };

export interface BrowserSession {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Chromium with a fresh profile in a temp dir (Playwright takes it as the persistent context's user data dir). */
export async function launchBrowser(): Promise<BrowserSession> {
  if (!existsSync(CHROMIUM_PATH))
    throw new Error(`${CHROMIUM_PATH} is missing: apt-get update && apt-get install -y chromium`);
  const profile = mkdtempSync(join(tmpdir(), 'matricula-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: DESKTOP,
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export interface PortalServer {
  h: Harness;
  /** http://127.0.0.1:<port>: BASE_URL and PORTAL_URL. */
  origin: string;
  sandbox: Tenant;
  live: Tenant;
  close(): Promise<void>;
}

/**
 * The real app on 127.0.0.1 at a port the kernel picked: the server listens on port 0 first and
 * the app, built with that address as BASE_URL and PORTAL_URL, then serves its requests. No port
 * is reserved and released beforehand, so no other process can take it in between.
 */
export async function startPortalServer(
  dialect: DialectName = 'sqlite',
  config: Record<string, string> = {},
): Promise<PortalServer> {
  // The address is known before the app is built, so that everything built from the configuration
  // (audiences, the sandbox status lists' URIs) names the address the browser uses.
  const server = await loopbackServer();
  const origin = server.origin;
  const h = await startHarness(dialect, { BASE_URL: origin, PORTAL_URL: origin, PORT: String(server.port), ...config });
  await server.serve(h.app);
  const sandbox = await h.bootstrap('sandbox');
  const live = await h.bootstrap('live');
  return { h, origin, sandbox, live, close: () => h.close() };
}

/** Saves a screenshot under test-output/screenshots/ (kept by CI as test output). */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** The text of the QR code in a PNG image, or undefined when none is found. */
export function decodeQr(png: Buffer): string | undefined {
  const image = PNG.sync.read(png);
  return jsQR(
    new Uint8ClampedArray(image.data.buffer, image.data.byteOffset, image.data.length),
    image.width,
    image.height,
  )?.data;
}

/**
 * What a page did that it should not: CSP violations, console errors, requests to any origin
 * but the service's own. Collected as the page runs; tests assert the lists stay empty.
 */
export interface PageWatch {
  cspViolations: string[];
  consoleErrors: string[];
  foreignRequests: string[];
}

export function watchPage(page: Page, origin: string): PageWatch {
  const watch: PageWatch = { cspViolations: [], consoleErrors: [], foreignRequests: [] };
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const text = message.text();
    // Chromium logs a page's own error status (a 404 page is meant to be one); anything else counts.
    if (text.startsWith('Failed to load resource') && message.location().url === page.url()) return;
    if (/Content Security Policy/i.test(text)) watch.cspViolations.push(text);
    else watch.consoleErrors.push(text);
  });
  page.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(`${origin}/`) && !url.startsWith('data:')) watch.foreignRequests.push(url);
  });
  return watch;
}

/**
 * In-page source of the contrast check. A string, not a function: tsx compiles functions with
 * name helpers (`__name`) that do not exist in the page.
 */
const CONTRAST_CHECK = `(elements, minimum) => {
  const channel = (c) => { const s = c / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
  const parse = (color) => (color.match(/[\\d.]+/g) || []).map(Number);
  const luminance = ([r, g, b]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  const background = (element) => {
    for (let node = element; node; node = node.parentElement) {
      const [r, g, b, a = 1] = parse(getComputedStyle(node).backgroundColor);
      if (a >= 1) return [r, g, b];
    }
    return [255, 255, 255];
  };
  const out = [];
  for (const element of elements) {
    const box = element.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    const fg = luminance(parse(getComputedStyle(element).color));
    const bg = luminance(background(element));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    if (ratio < minimum) out.push(element.tagName.toLowerCase() + ' "' + (element.textContent || '').trim().slice(0, 40) + '": ' + ratio.toFixed(2));
  }
  return out;
}`;

/**
 * WCAG contrast ratio of each matched, visible element's text against the first opaque
 * background behind it. Returns the ones below `minimum` (4.5:1, AA for body text).
 */
export async function lowContrast(page: Page, selector: string, minimum = 4.5): Promise<string[]> {
  // An expression string runs through the DevTools protocol, which the page's CSP does not govern.
  return page.evaluate(
    `(${CONTRAST_CHECK})(Array.from(document.querySelectorAll(${JSON.stringify(selector)})), ${minimum})`,
  );
}
