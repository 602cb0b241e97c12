import type { Clock } from '../../domain/clock.ts';
import type { Environment } from '../../domain/environment.ts';
import type { IdentityProvider } from '../../domain/identity-providers.ts';
import { newId } from '../../domain/ids.ts';
import { fetchPublished } from '../../outbound/fetch.ts';
import { checkTargetUrlShape, createGuardedDispatcher } from '../../outbound/ssrf.ts';
import type { Db } from '../../store/db.ts';
import {
  deleteIdentityProvider,
  findIdentityProvider,
  insertIdentityProvider,
  listIdentityProviders,
  listIdentityProvidersPage,
  type StoredIdentityProvider,
} from '../../store/identity-providers.ts';
import type { Page, PageRequest } from '../../store/pagination.ts';
import { parseIdpMetadata, type IdpMetadata } from './saml/idp-metadata.ts';
import { sealSecret } from './secret-box.ts';

/**
 * The registry of identity providers (`matricula idps …`, /admin/v1/identity-providers): who may
 * answer a session by university login, in which environment, with which keys and scopes. What a
 * result says of the university (name, domain, country) comes from here, never from an assertion.
 */

/** A provider as shown by the CLI and the admin API: the client secret never, only whether one is set. */
export type IdentityProviderView = IdentityProvider & { clientSecretSet: boolean };

export function providerView(stored: StoredIdentityProvider): IdentityProviderView {
  const { clientSecretSealed, ...provider } = stored;
  return { ...provider, clientSecretSet: clientSecretSealed !== null };
}

export interface AddProviderInput {
  environment?: Environment;
  /** SAML: the metadata document (one EntityDescriptor with an IDPSSODescriptor)… */
  samlMetadata?: string;
  /** …or where to fetch it (through the outbound SSRF guard). */
  samlMetadataUrl?: string;
  /** OpenID Connect: the issuer identifier, client credentials, and the domain it vouches for. */
  oidcIssuer?: string;
  clientId?: string;
  clientSecret?: string;
  affiliationClaim?: string;
  /** Set by {@link samlMetadataFrom} when the metadata could not be fetched. */
  fetchProblem?: string;
  /** Overrides of what metadata tells (or, for OpenID Connect, what it cannot tell). */
  name?: string;
  domain?: string;
  country?: string;
}

export type AddProviderOutcome =
  | { ok: true; provider: IdentityProviderView }
  | { ok: false; kind: 'invalid'; problems: string[] }
  | { ok: false; kind: 'duplicate'; message: string };

const COUNTRY = /^[A-Z]{2}$/;
const DOMAIN = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/;

type Deps = {
  db: Db;
  clock: Clock;
  config: { outboundAllowPrivateTargets: boolean; universityLogin: { secretsKey?: Buffer } };
};

/** A country from the scope's top-level domain when it is a country code. */
export function countryFromDomain(domain: string): string | undefined {
  const tld = domain.split('.').pop() ?? '';
  if (!/^[a-z]{2}$/.test(tld) || tld === 'eu') return undefined;
  return tld === 'uk' ? 'GB' : tld.toUpperCase();
}

function samlProvider(
  metadata: IdpMetadata,
  input: AddProviderInput,
  base: Omit<StoredIdentityProvider, 'protocol' | 'entityId' | 'name' | 'domain' | 'country' | 'scopes'>,
): StoredIdentityProvider | string[] {
  const domain = input.domain?.toLowerCase() ?? metadata.scopes[0]!;
  const country = input.country ?? metadata.country ?? countryFromDomain(domain);
  const problems: string[] = [];
  if (!country || !COUNTRY.test(country))
    problems.push('country: the metadata does not tell it; give --country (ISO 3166-1 alpha-2)');
  if (!metadata.scopes.includes(domain))
    problems.push(`domain: ${domain} is not a shibmd:Scope of the metadata (${metadata.scopes.join(', ')})`);
  if (problems.length) return problems;
  return {
    ...base,
    protocol: 'saml',
    entityId: metadata.entityId,
    name: input.name ?? metadata.name,
    domain,
    country: country!,
    scopes: metadata.scopes,
    saml: { ssoUrl: metadata.ssoUrl, certificates: metadata.certificates },
  };
}

function oidcProvider(
  input: AddProviderInput,
  deps: Deps,
  base: Omit<StoredIdentityProvider, 'protocol' | 'entityId' | 'name' | 'domain' | 'country' | 'scopes'>,
): StoredIdentityProvider | string[] {
  const problems: string[] = [];
  const issuer = input.oidcIssuer!;
  const shape = checkTargetUrlShape(issuer, { allowPrivateTargets: deps.config.outboundAllowPrivateTargets });
  if (!shape.ok) problems.push(`oidcIssuer: ${shape.message}`);
  if (!input.clientId) problems.push('clientId: required with an OpenID Connect issuer');
  let host = '';
  try {
    host = new URL(issuer).hostname.toLowerCase();
  } catch {
    problems.push('oidcIssuer: not a URL');
  }
  const domain = (input.domain ?? host).toLowerCase();
  if (!DOMAIN.test(domain)) problems.push(`domain: ${domain} is not a DNS name; give --domain`);
  const country = input.country ?? countryFromDomain(domain);
  if (!country || !COUNTRY.test(country)) problems.push('country: give --country (ISO 3166-1 alpha-2)');
  const key = deps.config.universityLogin.secretsKey;
  if (input.clientSecret && !key)
    problems.push('clientSecret: set IDP_SECRETS_KEY so that it can be kept sealed at rest');
  if (problems.length) return problems;
  return {
    ...base,
    protocol: 'oidc',
    entityId: issuer,
    name: input.name ?? domain,
    domain,
    country: country!,
    scopes: [domain],
    oidc: { clientId: input.clientId!, affiliationClaim: input.affiliationClaim ?? 'eduperson_scoped_affiliation' },
    clientSecretSealed: input.clientSecret ? sealSecret(key!, input.clientSecret, base.id) : null,
  };
}

/**
 * The input with `samlMetadataUrl` fetched into `samlMetadata`: through the SSRF guard, with the
 * issuer-fetch timeout and size limit (ISSUER_FETCH_TIMEOUT_MS, ISSUER_FETCH_MAX_BYTES). A fetch
 * that fails leaves a problem for {@link addIdentityProvider} to report.
 */
export async function samlMetadataFrom(
  deps: {
    clock: Clock;
    config: { outboundAllowPrivateTargets: boolean; trust: { fetchTimeoutMs: number; fetchMaxBytes: number } };
  },
  input: AddProviderInput,
): Promise<AddProviderInput> {
  if (input.samlMetadataUrl === undefined) return input;
  const { samlMetadataUrl, ...rest } = input;
  if (rest.samlMetadata !== undefined)
    return { ...rest, samlMetadata: '', fetchProblem: 'give the metadata or its URL, not both' };
  const allowPrivateTargets = deps.config.outboundAllowPrivateTargets;
  const fetched = await fetchPublished(samlMetadataUrl, 'application/samlmetadata+xml, application/xml', {
    dispatcher: createGuardedDispatcher({ allowPrivateTargets }),
    allowPrivateTargets,
    clock: deps.clock,
    timeoutMs: deps.config.trust.fetchTimeoutMs,
    maxBytes: deps.config.trust.fetchMaxBytes,
  });
  return fetched.ok
    ? { ...rest, samlMetadata: fetched.value.body }
    : { ...rest, samlMetadata: '', fetchProblem: fetched.message };
}

/** Adds one identity provider from its SAML metadata or its OpenID Connect issuer. */
export async function addIdentityProvider(deps: Deps, input: AddProviderInput): Promise<AddProviderOutcome> {
  if (input.fetchProblem) return { ok: false, kind: 'invalid', problems: [`samlMetadataUrl: ${input.fetchProblem}`] };
  if ((input.samlMetadata === undefined) === (input.oidcIssuer === undefined))
    return { ok: false, kind: 'invalid', problems: ['give either SAML metadata or an OpenID Connect issuer'] };
  const base = {
    id: newId('identityProvider', deps.clock),
    environment: input.environment ?? 'live',
    federation: null,
    createdAt: deps.clock.now().toISOString(),
    clientSecretSealed: null,
  } as const;
  let provider: StoredIdentityProvider | string[];
  if (input.samlMetadata !== undefined) {
    const parsed = parseIdpMetadata(input.samlMetadata);
    if (!parsed.ok) return { ok: false, kind: 'invalid', problems: [parsed.problem] };
    if (parsed.providers.length !== 1)
      return {
        ok: false,
        kind: 'invalid',
        problems:
          parsed.providers.length === 0
            ? parsed.skipped.length
              ? parsed.skipped
              : ['the metadata has no identity provider']
            : ['the metadata has several identity providers: load it as a federation aggregate'],
      };
    provider = samlProvider(parsed.providers[0]!, input, base);
  } else provider = oidcProvider(input, deps, base);
  if (Array.isArray(provider)) return { ok: false, kind: 'invalid', problems: provider };
  if (!(await insertIdentityProvider(deps.db, provider)))
    return {
      ok: false,
      kind: 'duplicate',
      message: `${provider.entityId} is already registered (${provider.environment}); remove it first to replace it.`,
    };
  return { ok: true, provider: providerView(provider) };
}

export async function registeredProviders(
  deps: { db: Db },
  environment?: Environment,
): Promise<IdentityProviderView[]> {
  return (await listIdentityProviders(deps.db, environment)).map(providerView);
}

export async function registeredProvidersPage(
  deps: { db: Db },
  page: PageRequest,
  environment?: Environment,
): Promise<Page<IdentityProviderView>> {
  const found = await listIdentityProvidersPage(deps.db, page, environment);
  return { ...found, items: found.items.map(providerView) };
}

export async function registeredProvider(deps: { db: Db }, id: string): Promise<IdentityProviderView | undefined> {
  const found = await findIdentityProvider(deps.db, id);
  return found && providerView(found);
}

/** Removes a provider: logins through it stop at once (an answer in flight is refused). */
export async function removeProvider(deps: { db: Db }, id: string): Promise<IdentityProviderView | undefined> {
  const found = await findIdentityProvider(deps.db, id);
  if (!found || !(await deleteIdentityProvider(deps.db, id))) return undefined;
  return providerView(found);
}
