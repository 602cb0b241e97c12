import { readFileSync } from 'node:fs';
import type { Environment } from '../domain/environment.ts';
import { parsePemCertificate } from '../proofs/x509.ts';
import { createIssuerPublications } from '../services/deps.ts';
import {
  addIssuer,
  refreshIssuerMetadata,
  registeredIssuer,
  registeredIssuers,
  removeIssuer,
} from '../services/trust-registry.ts';
import type { StoredIssuer } from '../services/trust-registry.ts';
import { adminCall, adminTarget, ADMIN_URL_OPTION, ADMIN_USAGE, type AdminTarget } from './admin-client.ts';
import { printJson, UsageError, type Command } from './command.ts';

export function readJsonFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${path} is not valid JSON`);
  }
}

interface Page<T> {
  data: T[];
  pagination: { hasMore: boolean; nextCursor: string | null };
}

/** Every issuer the admin API lists, in the order the database listing uses (environment, domain). */
async function listThroughAdmin(admin: AdminTarget, environment?: string): Promise<StoredIssuer[]> {
  const issuers: StoredIssuer[] = [];
  for (let cursor: string | null = null; ;) {
    const query = new URLSearchParams({ limit: '100' });
    if (environment) query.set('environment', environment);
    if (cursor) query.set('startingAfter', cursor);
    const page: Page<StoredIssuer> = await adminCall(admin, 'GET', `/admin/v1/issuers?${query}`);
    issuers.push(...page.data);
    cursor = page.pagination.nextCursor;
    if (!cursor) break;
  }
  const key = (i: StoredIssuer) => `${i.environment}\u0000${i.domain}`;
  return issuers.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The issuer definition: the --file JSON, if any, with the flags laid over it. */
function issuerInput(values: Record<string, unknown>): Record<string, unknown> {
  const file = values.file as string | undefined;
  const input = file === undefined ? {} : readJsonFile(file);
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw new UsageError(`${file} must hold a JSON object`);
  const merged = { ...(input as Record<string, unknown>) };
  for (const field of ['name', 'domain', 'country', 'environment'] as const)
    if (values[field] !== undefined) merged[field] = values[field];
  const anchors = (values.anchor as string[] | undefined) ?? [];
  if (anchors.length)
    merged.anchors = [...((merged.anchors as unknown[] | undefined) ?? []), ...anchors.map((path) => readText(path))];
  if (values.metadata !== undefined) merged.metadataIssuer = values.metadata;
  if (file === undefined && anchors.length === 0 && values.metadata === undefined)
    throw new UsageError(
      'give --file ISSUER.json, or --anchor CERT.pem / --metadata URL with --name, --domain, --country, --environment',
    );
  return merged;
}

/** How a university is trusted, in a few words: formats of its raw keys, anchors, metadata. */
function trustSummary(issuer: StoredIssuer): string {
  const parts = [...Object.keys(issuer.keys ?? {})];
  if (issuer.anchors?.length) parts.push(`x509 anchors: ${issuer.anchors.length}`);
  if (issuer.metadataIssuer) parts.push(`metadata: ${issuer.metadataIssuer}`);
  return parts.join(', ');
}

export const issuersAdd: Command = {
  path: ['issuers', 'add'],
  summary: 'Add a university to the trust registry (raw keys, X.509 anchors, issuer metadata)',
  usage:
    'matricula issuers add --file ISSUER.json [--anchor CERT.pem]... [--metadata URL] [--admin-url URL] [--json]\n' +
    'matricula issuers add --name N --domain D --country CC --environment sandbox|live\n' +
    '                      (--anchor CERT.pem... | --metadata https://issuer) [--json]\n\n' +
    'The file: {"name", "domain", "country" (ISO 3166 alpha-2), "environment" ("sandbox"|"live"),\n' +
    ' "keys": {"sdJwtVc": <public JWK, P-256 or Ed25519>, "bbs": <base64url BLS12-381 G2 key>,\n' +
    '          "babyJubJub": {"x", "y"} (decimal)},\n' +
    ' "anchors": [<PEM CA certificate>], "metadataIssuer": "https://…"} with at least one of them.\n' +
    'Every key must be a valid point of its curve (prime-order subgroup, not the identity), and a\n' +
    'live university may not use a published sandbox key. --anchor adds an X.509 trust anchor (a CA\n' +
    'certificate): sd-jwt-vc credentials whose x5c chain leads to it and names the issuer verify.\n' +
    "--metadata trusts the keys of the issuer's /.well-known/jwt-vc-issuer, or of a did:web's DID document\n" +
    '(W3C credentials, jwt_vc_json) (docs/trust.md).\n\n' +
    ADMIN_USAGE,
  options: {
    file: { type: 'string' },
    anchor: { type: 'string', multiple: true },
    metadata: { type: 'string' },
    name: { type: 'string' },
    domain: { type: 'string' },
    country: { type: 'string' },
    environment: { type: 'string' },
    json: { type: 'boolean' },
    ...ADMIN_URL_OPTION,
  },
  async run(values, _positionals, ctx) {
    const input = issuerInput(values);
    const admin = adminTarget(values, ctx);
    let issuer: StoredIssuer;
    if (admin) {
      issuer = (await adminCall<{ data: StoredIssuer }>(admin, 'POST', '/admin/v1/issuers', input)).data;
    } else {
      const store = await ctx.openStore();
      const added = await addIssuer({ db: store.db, clock: ctx.clock, config: ctx.config() }, input);
      if (!added.ok)
        throw new UsageError(
          added.kind === 'invalid' ? `invalid issuer:\n  - ${added.problems.join('\n  - ')}` : added.message,
        );
      issuer = added.issuer;
    }
    const { createdAt: _createdAt, ...shown } = issuer;
    if (values.json) printJson(ctx, shown);
    else ctx.stdout(`Added ${issuer.id}  ${issuer.domain} (${issuer.environment})  trust: ${trustSummary(issuer)}`);
    return 0;
  },
};

export const issuersShow: Command = {
  path: ['issuers', 'show'],
  summary: 'Show one university of the trust registry: keys, anchors (subject, validity), metadata',
  usage: `matricula issuers show ISSUER_ID [--admin-url URL] [--json]\n\n${ADMIN_USAGE}`,
  options: { json: { type: 'boolean' }, ...ADMIN_URL_OPTION },
  async run(values, positionals, ctx) {
    const id = positionals[0];
    if (!id || positionals.length > 1) throw new UsageError('give exactly one issuer id');
    const admin = adminTarget(values, ctx);
    const issuer = admin
      ? (await adminCall<{ data: StoredIssuer }>(admin, 'GET', `/admin/v1/issuers/${encodeURIComponent(id)}`)).data
      : await registeredIssuer({ db: (await ctx.openStore()).db }, id);
    if (!issuer) throw new UsageError(`no issuer ${id}`);
    if (values.json) {
      printJson(ctx, issuer);
      return 0;
    }
    ctx.stdout(`${issuer.id}  ${issuer.name}  ${issuer.domain} (${issuer.country}, ${issuer.environment})`);
    for (const [format, key] of Object.entries(issuer.keys ?? {}))
      ctx.stdout(`  key ${format}: ${JSON.stringify(key)}`);
    for (const pem of issuer.anchors ?? []) {
      const cert = parsePemCertificate(pem);
      ctx.stdout(
        cert
          ? `  x509 anchor: ${cert.subject.replace(/\n/g, ', ')}  valid ${cert.validFrom} to ${cert.validTo}`
          : '  x509 anchor: (unreadable)',
      );
    }
    if (issuer.metadataIssuer) ctx.stdout(`  metadata: ${issuer.metadataIssuer} (/.well-known/jwt-vc-issuer)`);
    return 0;
  },
};

export const issuersRefresh: Command = {
  path: ['issuers', 'refresh'],
  summary: "Fetch an issuer's /.well-known/jwt-vc-issuer metadata now and show its keys",
  usage:
    'matricula issuers refresh ISSUER_ID [--admin-url URL] [--json]\n\n' +
    'With --admin-url the server fetches and replaces its cached copy at once. Without it, this command\n' +
    'fetches from here (same SSRF guard, timeout and size limit) to show what the server will see; the\n' +
    `server's cache then refreshes on its own (ISSUER_METADATA_CACHE_MAX_SECONDS) or on an unknown kid.\n\n${ADMIN_USAGE}`,
  options: { json: { type: 'boolean' }, ...ADMIN_URL_OPTION },
  async run(values, positionals, ctx) {
    const id = positionals[0];
    if (!id || positionals.length > 1) throw new UsageError('give exactly one issuer id');
    const admin = adminTarget(values, ctx);
    let refreshed: { issuer: StoredIssuer; keys: JsonWebKey[] };
    if (admin) {
      refreshed = (
        await adminCall<{ data: typeof refreshed }>(
          admin,
          'POST',
          `/admin/v1/issuers/${encodeURIComponent(id)}/refresh`,
        )
      ).data;
    } else {
      const db = (await ctx.openStore()).db;
      const publications = createIssuerPublications({ db, clock: ctx.clock, config: ctx.config() });
      const outcome = await refreshIssuerMetadata({ db, publications }, id);
      if (!outcome.ok) throw new UsageError(outcome.message);
      refreshed = outcome;
    }
    if (values.json) printJson(ctx, { issuerId: refreshed.issuer.id, keys: refreshed.keys });
    else {
      ctx.stdout(`${refreshed.issuer.id}  ${refreshed.issuer.metadataIssuer}: ${refreshed.keys.length} key(s)`);
      for (const key of refreshed.keys) ctx.stdout(`  ${JSON.stringify(key)}`);
    }
    return 0;
  },
};

export const issuersList: Command = {
  path: ['issuers', 'list'],
  summary: 'List the trust registry',
  usage: `matricula issuers list [--environment sandbox|live] [--admin-url URL] [--json]\n\n${ADMIN_USAGE}`,
  options: { environment: { type: 'string' }, json: { type: 'boolean' }, ...ADMIN_URL_OPTION },
  async run(values, _positionals, ctx) {
    const environment = values.environment as string | undefined;
    if (environment !== undefined && environment !== 'sandbox' && environment !== 'live')
      throw new UsageError('--environment must be sandbox or live');
    const admin = adminTarget(values, ctx);
    const issuers = admin
      ? await listThroughAdmin(admin, environment)
      : await registeredIssuers({ db: (await ctx.openStore()).db }, environment as Environment | undefined);
    if (values.json) {
      printJson(ctx, { data: issuers });
      return 0;
    }
    if (issuers.length === 0) ctx.stdout('The trust registry is empty.');
    for (const i of issuers)
      ctx.stdout(
        `${i.id}  ${i.environment.padEnd(7)}  ${i.country}  ${i.domain.padEnd(28)}  ${i.name}  [${trustSummary(i)}]`,
      );
    return 0;
  },
};

export const issuersRemove: Command = {
  path: ['issuers', 'remove'],
  summary: 'Remove a university from the trust registry (its credentials stop verifying at once)',
  usage: `matricula issuers remove ISSUER_ID [--admin-url URL]\n\n${ADMIN_USAGE}`,
  options: { ...ADMIN_URL_OPTION },
  async run(values, positionals, ctx) {
    const id = positionals[0];
    if (!id || positionals.length > 1) throw new UsageError('give exactly one issuer id');
    const admin = adminTarget(values, ctx);
    let issuer: StoredIssuer | undefined;
    if (admin) {
      issuer = (await adminCall<{ data: StoredIssuer }>(admin, 'DELETE', `/admin/v1/issuers/${encodeURIComponent(id)}`))
        .data;
    } else {
      issuer = await removeIssuer({ db: (await ctx.openStore()).db }, id);
      if (!issuer) throw new UsageError(`no issuer ${id}`);
    }
    ctx.stdout(`Removed ${id}  ${issuer.domain} (${issuer.environment})`);
    return 0;
  },
};
