import { setGlobalConfig } from '@openid4vc/oauth2';

/**
 * The libraries refuse http:// request and response URIs, as OpenID4VP requires in production. A
 * BASE_URL of http:// is local development (a wallet on the same machine, the tests): allowed
 * then, for the process (the library's setting is global). Called once, by createServiceDeps at
 * composition, never from a request: a process-wide switch flipped on request paths is a race
 * waiting to happen. Never turned off again: an https BASE_URL never produces an http URI anyway.
 */
export function configureOpenid4vpLibraries(config: { baseUrl: string }): void {
  if (config.baseUrl.startsWith('http://')) setGlobalConfig({ allowInsecureUrls: true });
}
