import { readFileSync } from 'node:fs';
import type { Environment } from '../domain/environment.ts';
import { addIssuer, registeredIssuers, removeIssuer } from '../services/trust-registry.ts';
import type { StoredIssuer } from '../store/issuers.ts';
import { adminCall, adminTarget, ADMIN_URL_OPTION, ADMIN_USAGE, type AdminTarget } from './admin-client.ts';
import { printJson, requireOption, UsageError, type Command } from './command.ts';

function readJsonFile(path: string): unknown {
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

export const issuersAdd: Command = {
  path: ['issuers', 'add'],
  summary: 'Add a university to the trust registry from a JSON file',
  usage:
    'matricula issuers add --file ISSUER.json [--admin-url URL] [--json]\n\n' +
    'The file: {"name", "domain", "country" (ISO 3166 alpha-2), "environment" ("sandbox"|"live"),\n' +
    ' "keys": {"sdJwtVc": <public JWK, P-256 or Ed25519>, "bbs": <base64url BLS12-381 G2 key>,\n' +
    '          "babyJubJub": {"x", "y"} (decimal)}} with at least one key.\n' +
    'Every key must be a valid point of its curve (prime-order subgroup, not the identity), and a\n' +
    `live university may not use a published sandbox key.\n\n${ADMIN_USAGE}`,
  options: { file: { type: 'string' }, json: { type: 'boolean' }, ...ADMIN_URL_OPTION },
  async run(values, _positionals, ctx) {
    const input = readJsonFile(requireOption(values, 'file'));
    const admin = adminTarget(values, ctx);
    let issuer: StoredIssuer;
    if (admin) {
      issuer = (await adminCall<{ data: StoredIssuer }>(admin, 'POST', '/admin/v1/issuers', input)).data;
    } else {
      const store = await ctx.openStore();
      const added = await addIssuer({ db: store.db, clock: ctx.clock }, input);
      if (!added.ok)
        throw new UsageError(
          added.kind === 'invalid' ? `invalid issuer:\n  - ${added.problems.join('\n  - ')}` : added.message,
        );
      issuer = added.issuer;
    }
    const { createdAt: _createdAt, ...shown } = issuer;
    if (values.json) printJson(ctx, shown);
    else
      ctx.stdout(
        `Added ${issuer.id}  ${issuer.domain} (${issuer.environment})  formats: ${Object.keys(issuer.keys).join(', ')}`,
      );
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
        `${i.id}  ${i.environment.padEnd(7)}  ${i.country}  ${i.domain.padEnd(28)}  ${i.name}  [${Object.keys(i.keys).join(', ')}]`,
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
