import { readFileSync } from 'node:fs';
import { newId } from '../domain/ids.ts';
import type { Environment } from '../domain/environment.ts';
import { validateIssuerInput } from '../proofs/issuer-definitions.ts';
import { deleteIssuer, findIssuer, insertIssuer, listIssuers } from '../store/issuers.ts';
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

export const issuersAdd: Command = {
  path: ['issuers', 'add'],
  summary: 'Add a university to the trust registry from a JSON file',
  usage:
    'matricula issuers add --file ISSUER.json [--json]\n\n' +
    'The file: {"name", "domain", "country" (ISO 3166 alpha-2), "environment" ("sandbox"|"live"),\n' +
    ' "keys": {"sdJwtVc": <public JWK, P-256 or Ed25519>, "bbs": <base64url BLS12-381 G2 key>,\n' +
    '          "babyJubJub": {"x", "y"} (decimal)}} with at least one key.\n' +
    'Every key must be a valid point of its curve (prime-order subgroup, not the identity), and a\n' +
    'live university may not use a published sandbox key.',
  options: { file: { type: 'string' }, json: { type: 'boolean' } },
  async run(values, _positionals, ctx) {
    const checked = validateIssuerInput(readJsonFile(requireOption(values, 'file')));
    if (!checked.ok) throw new UsageError(`invalid issuer:\n  - ${checked.problems.join('\n  - ')}`);
    const store = await ctx.openStore();
    const issuer = { ...checked.issuer, id: newId('issuer', ctx.clock) };
    if (!(await insertIssuer(store.db, issuer, ctx.clock.now().toISOString()))) {
      throw new UsageError(
        `an issuer for ${issuer.domain} (${issuer.environment}) is already registered; remove it first to replace its keys`,
      );
    }
    if (values.json) printJson(ctx, issuer);
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
  usage: 'matricula issuers list [--environment sandbox|live] [--json]',
  options: { environment: { type: 'string' }, json: { type: 'boolean' } },
  async run(values, _positionals, ctx) {
    const environment = values.environment as string | undefined;
    if (environment !== undefined && environment !== 'sandbox' && environment !== 'live')
      throw new UsageError('--environment must be sandbox or live');
    const store = await ctx.openStore();
    const issuers = await listIssuers(store.db, environment as Environment | undefined);
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
  usage: 'matricula issuers remove ISSUER_ID',
  options: {},
  async run(_values, positionals, ctx) {
    const id = positionals[0];
    if (!id || positionals.length > 1) throw new UsageError('give exactly one issuer id');
    const store = await ctx.openStore();
    const issuer = await findIssuer(store.db, id);
    if (!issuer || !(await deleteIssuer(store.db, id))) throw new UsageError(`no issuer ${id}`);
    ctx.stdout(`Removed ${id}  ${issuer.domain} (${issuer.environment})`);
    return 0;
  },
};
