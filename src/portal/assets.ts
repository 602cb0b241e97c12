import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

/**
 * The portal's static files: one stylesheet, one script per page, an icon. They ship inside the
 * service (no CDN: kiosks and this machine have no internet) and are addressed with a content
 * hash (`/assets/site.css?v=…`), so browsers may cache them for good and a new release is never
 * mixed with an old script.
 */
const FILES = {
  'site.css': 'text/css; charset=utf-8',
  'verify.js': 'text/javascript; charset=utf-8',
  'wallet.js': 'text/javascript; charset=utf-8',
  'dashboard.css': 'text/css; charset=utf-8',
  'dashboard.js': 'text/javascript; charset=utf-8',
  'university-login.js': 'text/javascript; charset=utf-8',
  'dc-api.js': 'text/javascript; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
} as const;

export type AssetName = keyof typeof FILES;

export interface Asset {
  body: Buffer;
  contentType: string;
  /** First 16 hex digits of the SHA-256 of the body. */
  version: string;
}

let loaded: Map<string, Asset> | undefined;

/** Reads the files once, on first use; they are part of the code, not data. */
function assets(): Map<string, Asset> {
  if (!loaded) {
    loaded = new Map();
    for (const [name, contentType] of Object.entries(FILES)) {
      const body = readFileSync(new URL(`./assets/${name}`, import.meta.url));
      loaded.set(name, { body, contentType, version: createHash('sha256').update(body).digest('hex').slice(0, 16) });
    }
  }
  return loaded;
}

/** The asset of that exact name, or undefined: only the files listed above are ever served. */
export function findAsset(name: string): Asset | undefined {
  return Object.hasOwn(FILES, name) ? assets().get(name) : undefined;
}

/** The versioned URL pages link to. */
export function assetUrl(name: AssetName): string {
  return `/assets/${name}?v=${assets().get(name)!.version}`;
}
