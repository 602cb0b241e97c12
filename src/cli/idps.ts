import { readFileSync } from 'node:fs';
import type { Environment } from '../domain/environment.ts';
import {
  addIdentityProvider,
  registeredProvider,
  registeredProviders,
  removeProvider,
  samlMetadataFrom,
  type AddProviderInput,
  type IdentityProviderView,
} from '../services/sso/registry.ts';
import {
  addFederation,
  refreshFederation,
  registeredFederation,
  registeredFederations,
  removeFederation,
  type FederationView,
  type SyncCounts,
} from '../services/sso/federation.ts';
import { adminCall, adminTarget, ADMIN_URL_OPTION, ADMIN_USAGE, type AdminTarget } from './admin-client.ts';
import { printJson, UsageError, type Command } from './command.ts';

/** `matricula idps …`: the identity providers whose logins may answer sessions (docs/university-login.md). */

function environmentOption(values: Record<string, unknown>): Environment | undefined {
  const environment = values.environment as string | undefined;
  if (environment !== undefined && environment !== 'sandbox' && environment !== 'live')
    throw new UsageError('--environment must be sandbox or live');
  return environment;
}

function summary(p: IdentityProviderView): string {
  return `${p.id}  ${p.environment.padEnd(7)}  ${p.protocol.padEnd(4)}  ${p.country}  ${p.domain.padEnd(24)}  ${p.name}  [${p.entityId}]`;
}

function federationSummary(f: FederationView): string {
  return `${f.id}  ${f.environment.padEnd(7)}  federation  ${String(f.entityCount).padStart(5)} IdPs  valid until ${f.validUntil ?? '-'}  ${f.name}${f.metadataUrl ? `  [${f.metadataUrl}]` : ''}${f.lastError ? `  last error: ${f.lastError}` : ''}`;
}

function countsLine(c: SyncCounts): string {
  return `${c.added} added, ${c.updated} updated, ${c.removed} removed, ${c.unchanged} unchanged, ${c.skipped} skipped`;
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${what} ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

type LoadResult = { federation: FederationView; counts: SyncCounts; skipped: string[] };

/** `idps add --federation-metadata URL|FILE --signing-certificate PEM`. */
async function addFederationCommand(
  values: Record<string, unknown>,
  ctx: Parameters<Command['run']>[2],
): Promise<number> {
  const source = values['federation-metadata'] as string;
  const certificate = values['signing-certificate'] as string | undefined;
  if (!certificate) throw new UsageError('--federation-metadata needs --signing-certificate PEM (file or text)');
  const input = {
    environment: environmentOption(values) ?? 'live',
    signingCertificate: certificate.includes('-----BEGIN') ? certificate : readText(certificate, 'certificate'),
    ...(/^https?:\/\//i.test(source) ? { metadataUrl: source } : { metadata: readText(source, 'metadata') }),
    ...(values.name !== undefined ? { name: values.name as string } : {}),
    ...(values.country !== undefined ? { country: values.country as string } : {}),
  };
  const admin = adminTarget(values, ctx);
  let loaded: LoadResult;
  if (admin)
    loaded = (await adminCall<{ data: LoadResult }>(admin, 'POST', '/admin/v1/identity-federations', input)).data;
  else {
    const store = await ctx.openStore();
    const outcome = await addFederation({ db: store.db, clock: ctx.clock, config: ctx.config() }, input);
    if (!outcome.ok) throw new UsageError(`invalid federation metadata:\n  - ${outcome.problems.join('\n  - ')}`);
    loaded = outcome;
  }
  if (values.json) printJson(ctx, loaded);
  else {
    ctx.stdout(`Added ${federationSummary(loaded.federation)}`);
    ctx.stdout(`  ${countsLine(loaded.counts)}`);
    for (const reason of loaded.skipped.slice(0, 10)) ctx.stdout(`  skipped: ${reason}`);
  }
  return 0;
}

async function listThroughAdmin(admin: AdminTarget, environment?: string): Promise<IdentityProviderView[]> {
  const all: IdentityProviderView[] = [];
  for (let cursor: string | null = null; ;) {
    const query = new URLSearchParams({ limit: '100' });
    if (environment) query.set('environment', environment);
    if (cursor) query.set('startingAfter', cursor);
    const page: { data: IdentityProviderView[]; pagination: { nextCursor: string | null } } = await adminCall(
      admin,
      'GET',
      `/admin/v1/identity-providers?${query}`,
    );
    all.push(...page.data);
    cursor = page.pagination.nextCursor;
    if (!cursor) break;
  }
  return all.sort((a, b) => `${a.environment} ${a.name}`.localeCompare(`${b.environment} ${b.name}`));
}

export const idpsAdd: Command = {
  path: ['idps', 'add'],
  summary: 'Register an identity provider for university login (SAML metadata, or an OpenID Connect issuer)',
  usage: [
    'matricula idps add --saml-metadata URL|FILE [--environment live|sandbox] [--name N] [--domain D] [--country CC] [--json]',
    'matricula idps add --federation-metadata URL|FILE --signing-certificate PEM [--environment live|sandbox]',
    '                   [--name N] [--country CC] [--json]',
    'matricula idps add --oidc-issuer URL --client-id ID --client-secret S [--domain D] [--country CC] [--name N]',
    '                   [--affiliation-claim CLAIM] [--environment live|sandbox] [--json]',
    '',
    'SAML: the metadata of one IdP (an md:EntityDescriptor): its signing certificates, HTTP-Redirect',
    'SingleSignOnService, shibmd:Scope (the domains it may vouch for) and MDUI display name are kept.',
    'A URL is fetched through the outbound SSRF guard. OpenID Connect: the client secret is sealed at',
    'rest (IDP_SECRETS_KEY); the domain (default: the issuer host) is the scope it may vouch for.',
    'Federation: a signed metadata aggregate (eduGAIN style) verified under the --signing-certificate (a PEM',
    'file or text); every SAML 2.0 IdP in it is registered. --country is for entities whose metadata tells',
    'none. A URL is refreshed per its cacheDuration (JOB_FEDERATION_REFRESH_SECONDS); remove the federation',
    '(idps remove fed_…) to remove its IdPs.',
    'The environment defaults to live: sandbox sessions use sandbox providers only.',
    '',
    ADMIN_USAGE,
  ].join('\n'),
  options: {
    'saml-metadata': { type: 'string' },
    'federation-metadata': { type: 'string' },
    'signing-certificate': { type: 'string' },
    'oidc-issuer': { type: 'string' },
    'client-id': { type: 'string' },
    'client-secret': { type: 'string' },
    'affiliation-claim': { type: 'string' },
    environment: { type: 'string' },
    name: { type: 'string' },
    domain: { type: 'string' },
    country: { type: 'string' },
    json: { type: 'boolean' },
    ...ADMIN_URL_OPTION,
  },
  async run(values, _positionals, ctx) {
    if (values['federation-metadata'] !== undefined) {
      if (values['saml-metadata'] !== undefined || values['oidc-issuer'] !== undefined)
        throw new UsageError('give one of --saml-metadata, --federation-metadata, --oidc-issuer');
      return addFederationCommand(values, ctx);
    }
    const metadata = values['saml-metadata'] as string | undefined;
    const issuer = values['oidc-issuer'] as string | undefined;
    if ((metadata === undefined) === (issuer === undefined))
      throw new UsageError('give --saml-metadata or --oidc-issuer');
    const input: AddProviderInput = {
      environment: environmentOption(values) ?? 'live',
      ...(values.name !== undefined ? { name: values.name as string } : {}),
      ...(values.domain !== undefined ? { domain: values.domain as string } : {}),
      ...(values.country !== undefined ? { country: values.country as string } : {}),
    };
    const isUrl = metadata !== undefined && /^https?:\/\//i.test(metadata);
    if (metadata !== undefined && !isUrl) {
      try {
        input.samlMetadata = readFileSync(metadata, 'utf8');
      } catch (err) {
        throw new UsageError(`cannot read ${metadata}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    if (isUrl) input.samlMetadataUrl = metadata;
    if (issuer !== undefined)
      Object.assign(input, {
        oidcIssuer: issuer,
        clientId: values['client-id'],
        clientSecret: values['client-secret'],
        ...(values['affiliation-claim'] !== undefined ? { affiliationClaim: values['affiliation-claim'] } : {}),
      });
    const admin = adminTarget(values, ctx);
    let provider: IdentityProviderView;
    if (admin) {
      provider = (await adminCall<{ data: IdentityProviderView }>(admin, 'POST', '/admin/v1/identity-providers', input))
        .data;
    } else {
      const store = await ctx.openStore();
      const deps = { db: store.db, clock: ctx.clock, config: ctx.config() };
      const added = await addIdentityProvider(deps, await samlMetadataFrom(deps, input));
      if (!added.ok)
        throw new UsageError(
          added.kind === 'invalid' ? `invalid identity provider:\n  - ${added.problems.join('\n  - ')}` : added.message,
        );
      provider = added.provider;
    }
    if (values.json) printJson(ctx, provider);
    else ctx.stdout(`Added ${summary(provider)}`);
    return 0;
  },
};

export const idpsList: Command = {
  path: ['idps', 'list'],
  summary: 'List the identity providers of university login',
  usage: `matricula idps list [--environment sandbox|live] [--admin-url URL] [--json]\n\n${ADMIN_USAGE}`,
  options: { environment: { type: 'string' }, json: { type: 'boolean' }, ...ADMIN_URL_OPTION },
  async run(values, _positionals, ctx) {
    const environment = environmentOption(values);
    const admin = adminTarget(values, ctx);
    const providers = admin
      ? await listThroughAdmin(admin, environment)
      : await registeredProviders({ db: (await ctx.openStore()).db }, environment);
    const federations = admin
      ? (
          await adminCall<{ data: FederationView[] }>(
            admin,
            'GET',
            `/admin/v1/identity-federations${environment ? `?environment=${environment}` : ''}`,
          )
        ).data
      : await registeredFederations({ db: (await ctx.openStore()).db }, environment);
    if (values.json) printJson(ctx, { data: providers, federations });
    else {
      for (const f of federations) ctx.stdout(federationSummary(f));
      if (providers.length === 0) ctx.stdout('No identity provider is registered.');
      else for (const p of providers) ctx.stdout(summary(p));
    }
    return 0;
  },
};

export const idpsShow: Command = {
  path: ['idps', 'show'],
  summary: 'Show one identity provider: scopes, endpoints, certificates',
  usage: `matricula idps show IDP_ID|FED_ID [--admin-url URL] [--json]\n\n${ADMIN_USAGE}`,
  options: { json: { type: 'boolean' }, ...ADMIN_URL_OPTION },
  async run(values, positionals, ctx) {
    const id = positionals[0];
    if (!id || positionals.length > 1) throw new UsageError('give exactly one identity provider id');
    const admin = adminTarget(values, ctx);
    if (id.startsWith('fed_')) {
      const federation = admin
        ? (
            await adminCall<{ data: FederationView }>(
              admin,
              'GET',
              `/admin/v1/identity-federations/${encodeURIComponent(id)}`,
            )
          ).data
        : await registeredFederation({ db: (await ctx.openStore()).db }, id);
      if (!federation) throw new UsageError(`no identity federation ${id}`);
      if (values.json) printJson(ctx, federation);
      else {
        ctx.stdout(federationSummary(federation));
        ctx.stdout(`  signing certificate SHA-256: ${federation.signingCertificateSha256}`);
        ctx.stdout(
          `  refreshed: ${federation.refreshedAt ?? '-'}  next refresh: ${federation.nextRefreshAt ?? '- (loaded from a file)'}`,
        );
      }
      return 0;
    }
    const provider = admin
      ? (
          await adminCall<{ data: IdentityProviderView }>(
            admin,
            'GET',
            `/admin/v1/identity-providers/${encodeURIComponent(id)}`,
          )
        ).data
      : await registeredProvider({ db: (await ctx.openStore()).db }, id);
    if (!provider) throw new UsageError(`no identity provider ${id}`);
    if (values.json) {
      printJson(ctx, provider);
      return 0;
    }
    ctx.stdout(summary(provider));
    ctx.stdout(`  scopes: ${provider.scopes.join(', ')}`);
    if (provider.saml)
      ctx.stdout(
        `  single sign-on: ${provider.saml.ssoUrl}\n  signing certificates: ${provider.saml.certificates.length}`,
      );
    if (provider.oidc)
      ctx.stdout(
        `  client id: ${provider.oidc.clientId}  secret: ${provider.clientSecretSet ? 'set (sealed)' : 'none'}  affiliation claim: ${provider.oidc.affiliationClaim}`,
      );
    if (provider.federation) ctx.stdout(`  federation: ${provider.federation}`);
    return 0;
  },
};

export const idpsRemove: Command = {
  path: ['idps', 'remove'],
  summary: 'Remove an identity provider, or a federation and its IdPs (logins through them stop at once)',
  usage: `matricula idps remove IDP_ID|FED_ID [--admin-url URL]\n\n${ADMIN_USAGE}`,
  options: { ...ADMIN_URL_OPTION },
  async run(values, positionals, ctx) {
    const id = positionals[0];
    if (!id || positionals.length > 1) throw new UsageError('give exactly one identity provider id');
    const admin = adminTarget(values, ctx);
    if (id.startsWith('fed_')) {
      const removed = admin
        ? (
            await adminCall<{ data: { federation: FederationView; removed: number } }>(
              admin,
              'DELETE',
              `/admin/v1/identity-federations/${encodeURIComponent(id)}`,
            )
          ).data
        : await removeFederation({ db: (await ctx.openStore()).db }, id);
      if (!removed) throw new UsageError(`no identity federation ${id}`);
      ctx.stdout(`Removed ${removed.federation.id}  ${removed.federation.name} and its ${removed.removed} IdPs`);
      return 0;
    }
    const provider = admin
      ? (
          await adminCall<{ data: IdentityProviderView }>(
            admin,
            'DELETE',
            `/admin/v1/identity-providers/${encodeURIComponent(id)}`,
          )
        ).data
      : await removeProvider({ db: (await ctx.openStore()).db }, id);
    if (!provider) throw new UsageError(`no identity provider ${id}`);
    ctx.stdout(`Removed ${provider.id}  ${provider.entityId} (${provider.environment})`);
    return 0;
  },
};

export const idpsRefresh: Command = {
  path: ['idps', 'refresh'],
  summary: 'Refresh a federation now, from its URL or from an aggregate file given again',
  usage: `matricula idps refresh FED_ID [--federation-metadata FILE] [--admin-url URL] [--json]\n\n${ADMIN_USAGE}`,
  options: { 'federation-metadata': { type: 'string' }, json: { type: 'boolean' }, ...ADMIN_URL_OPTION },
  async run(values, positionals, ctx) {
    const id = positionals[0];
    if (!id || positionals.length > 1 || !id.startsWith('fed_')) throw new UsageError('give exactly one federation id');
    const file = values['federation-metadata'] as string | undefined;
    const input = file !== undefined ? { metadata: readText(file, 'metadata') } : {};
    const admin = adminTarget(values, ctx);
    let loaded: LoadResult;
    if (admin)
      loaded = (
        await adminCall<{ data: LoadResult }>(
          admin,
          'POST',
          `/admin/v1/identity-federations/${encodeURIComponent(id)}/refresh`,
          input,
        )
      ).data;
    else {
      const store = await ctx.openStore();
      const outcome = await refreshFederation({ db: store.db, clock: ctx.clock, config: ctx.config() }, id, input);
      if (!outcome) throw new UsageError(`no identity federation ${id}`);
      if (!outcome.ok)
        throw new UsageError(
          `the refresh failed: ${outcome.problem}${outcome.withdrawn ? ` (${outcome.withdrawn} IdPs withdrawn: the metadata expired)` : ''}`,
        );
      loaded = outcome;
    }
    if (values.json) printJson(ctx, loaded);
    else ctx.stdout(`Refreshed ${federationSummary(loaded.federation)}\n  ${countsLine(loaded.counts)}`);
    return 0;
  },
};
