import * as client from 'openid-client';
import type { Clock } from '../../../domain/clock.ts';
import { BoundedCache } from '../../../domain/bounded-cache.ts';
import type { IdentityProvider } from '../../../domain/identity-providers.ts';
import { guardedFetch } from '../../../outbound/fetch.ts';
import { createGuardedDispatcher } from '../../../outbound/ssrf.ts';
import { openSecret } from '../secret-box.ts';

/**
 * An OpenID provider's configuration for openid-client: its discovery document (fetched through
 * the outbound SSRF guard, with the issuer-fetch timeout and size limit, and kept for a while),
 * our client's credentials, and the service clock. openid-client judges `exp`/`iat` by the system
 * clock plus a skew; the skew given is the service clock's offset, so the service clock decides
 * (tests move it), with {@link CLOCK_TOLERANCE_SECONDS} of tolerance like the SAML checks.
 */

/** How long a discovery document (and the JWKS fetched with it) is used before it is fetched again. */
export const DISCOVERY_TTL_MS = 10 * 60_000;
export const CLOCK_TOLERANCE_SECONDS = 60;

export interface OidcDiscoveryPolicy {
  clock: Clock;
  allowPrivateTargets: boolean;
  timeoutMs: number;
  maxBytes: number;
}

interface Discovered {
  metadata: client.ServerMetadata;
  jwks?: client.ExportedJWKSCache;
  at: number;
}

export class OidcDiscovery {
  readonly #cache = new BoundedCache<string, Discovered>(512);
  readonly #fetch: client.CustomFetch;

  constructor(private readonly policy: OidcDiscoveryPolicy) {
    const fetcher = guardedFetch({
      dispatcher: createGuardedDispatcher({ allowPrivateTargets: policy.allowPrivateTargets }),
      allowPrivateTargets: policy.allowPrivateTargets,
      clock: policy.clock,
      timeoutMs: policy.timeoutMs,
      maxBytes: policy.maxBytes,
    });
    this.#fetch = (url, options) => fetcher(url, options as RequestInit);
  }

  /**
   * The client configuration for `idp` (discovery fetched when not cached or too old). Throws
   * when the provider cannot be reached or its discovery document is not for its issuer.
   */
  async configuration(idp: IdentityProvider, clientSecret: string | undefined): Promise<client.Configuration> {
    const key = `${idp.id} ${idp.entityId}`;
    const now = this.policy.clock.now().getTime();
    let found = this.#cache.get(key);
    if (!found || now - found.at >= DISCOVERY_TTL_MS) {
      const discovered = await client.discovery(new URL(idp.entityId), idp.oidc!.clientId, undefined, undefined, {
        [client.customFetch]: this.#fetch,
        ...(this.#insecure(idp) ? { execute: [client.allowInsecureRequests] } : {}),
      });
      found = { metadata: discovered.serverMetadata(), at: now };
      this.#cache.set(key, found);
    }
    const config = new client.Configuration(
      found.metadata,
      idp.oidc!.clientId,
      {
        ...(clientSecret !== undefined ? { client_secret: clientSecret } : {}),
        [client.clockSkew]: Math.round((now - Date.now()) / 1000),
        [client.clockTolerance]: CLOCK_TOLERANCE_SECONDS,
      },
      clientAuthentication(found.metadata, clientSecret),
    );
    config[client.customFetch] = this.#fetch;
    if (this.#insecure(idp)) client.allowInsecureRequests(config);
    // openid-client trusts an ID token from the token endpoint by TLS alone unless told: check its
    // signature by a key of the provider's JWKS, whatever the transport.
    client.enableNonRepudiationChecks(config);
    if (found.jwks) client.setJwksCache(config, found.jwks);
    return config;
  }

  /** Keeps the provider's keys as fetched during a login, for the next logins. */
  keepKeys(idp: IdentityProvider, config: client.Configuration): void {
    const found = this.#cache.get(`${idp.id} ${idp.entityId}`);
    const jwks = client.getJwksCache(config);
    if (found && jwks) found.jwks = jwks;
  }

  /** http:// providers only where the operator allows private targets (development, tests). */
  #insecure(idp: IdentityProvider): boolean {
    return this.policy.allowPrivateTargets && idp.entityId.startsWith('http://');
  }
}

/** client_secret_basic (the default of OpenID Connect) unless the provider supports only _post; none without a secret. */
function clientAuthentication(metadata: client.ServerMetadata, secret: string | undefined): client.ClientAuth {
  if (secret === undefined) return client.None();
  const supported = metadata.token_endpoint_auth_methods_supported;
  if (supported && !supported.includes('client_secret_basic') && supported.includes('client_secret_post'))
    return client.ClientSecretPost(secret);
  return client.ClientSecretBasic(secret);
}

/**
 * The provider's client secret, unsealed (secret-box.ts, IDP_SECRETS_KEY); undefined for a
 * public client. Throws when it is sealed but cannot be opened (the key is missing or changed).
 */
export function clientSecretOf(sealed: string | null, idpId: string, key: Buffer | undefined): string | undefined {
  if (sealed === null) return undefined;
  const secret = key && openSecret(key, sealed, idpId);
  if (secret === undefined) throw new SecretUnavailable();
  return secret;
}

export class SecretUnavailable extends Error {
  constructor() {
    super('the client secret cannot be unsealed: IDP_SECRETS_KEY is not set, or is not the key it was sealed with');
    this.name = 'SecretUnavailable';
  }
}
