/**
 * The parsers of one environment variable each, shared by config.ts and its sections: a value
 * that does not parse throws {@link ConfigError}, whose message names the variable.
 */
import { readFileSync } from 'node:fs';

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`Invalid configuration: ${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

export function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim()))
    throw new ConfigError(name, `must be a whole number from ${min} to ${max} (got "${raw}")`);
  const value = Number(raw.trim());
  if (value < min || value > max)
    throw new ConfigError(name, `must be a whole number from ${min} to ${max} (got "${raw}")`);
  return value;
}

export function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = raw.trim().toLowerCase();
  if (['true', '1', 'yes'].includes(value)) return true;
  if (['false', '0', 'no'].includes(value)) return false;
  throw new ConfigError(name, `must be true or false (got "${raw}")`);
}

export function httpUrl(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be an absolute http(s) URL (got "${raw}")`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(name, `must be an http(s) URL (got "${raw}")`);
  if (url.search || url.hash) throw new ConfigError(name, `must not have a query or fragment (got "${raw}")`);
  return raw.replace(/\/+$/, '');
}

export function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(values as readonly string[]).includes(raw))
    throw new ConfigError(name, `must be one of ${values.join(', ')} (got "${raw}")`);
  return raw as T;
}

/** CORS_ORIGINS: comma-separated origins (`https://shop.example`, no path), each exactly as browsers send it. */
export function origins(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  return raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      let url: URL | undefined;
      try {
        url = new URL(entry);
      } catch {
        url = undefined;
      }
      if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== entry)
        throw new ConfigError(
          name,
          `must list origins such as https://shop.example, comma-separated, without a path or trailing slash (got "${entry}")`,
        );
      return entry;
    });
}

/** An operator's bearer token: unset or empty means none; too short to resist guessing is refused. */
export function operatorToken(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  if (raw.length < 16 || /\s/.test(raw))
    throw new ConfigError(name, 'must be at least 16 characters without spaces (e.g. openssl rand -hex 32)');
  return raw;
}

export function readPemFile(env: Env, name: string): string | undefined {
  const path = env[name];
  if (path === undefined || path === '') return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(name, `cannot be read (${path}): ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  if (!text.includes('-----BEGIN ')) throw new ConfigError(name, `must name a PEM file (${path})`);
  return text;
}
