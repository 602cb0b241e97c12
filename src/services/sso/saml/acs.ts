import type { ServiceDeps } from '../../deps.ts';
import {
  completeLogin,
  LoginRefused,
  rejectLogin,
  requestAnswered,
  requestedProvider,
  type LoginOutcome,
} from '../complete.ts';
import { CLOCK_SKEW_MS, spEndpoints } from './service-provider.ts';
import { readResponse, verifyResponse } from './response.ts';

/**
 * A SAML response posted to `POST /saml/v1/acs` (HTTP-POST binding). Every refusal throws
 * {@link LoginRefused}: those that cannot be tied to the session safely touch nothing; a response
 * for the right request whose checks fail is first a rejected attempt of the session.
 */
export async function receiveSamlResponse(
  deps: ServiceDeps,
  input: { samlResponse: string; relayState?: string; browserSecret?: string },
): Promise<LoginOutcome> {
  const keys = await deps.samlKeys();
  const { acsUrl } = spEndpoints(deps.config.baseUrl);
  const read = await readResponse(input.samlResponse, {
    maxBytes: deps.config.universityLogin.samlMaxResponseBytes,
    acsUrl,
    keys,
  });
  if (!read.ok) throw new LoginRefused(read.reason, read.message);
  const request = await requestAnswered(deps, read.inResponseTo, input.browserSecret);
  if (input.relayState !== undefined && input.relayState !== request.sessionId)
    throw new LoginRefused('nonce_mismatch', 'the RelayState names another session than the request answered');
  const idp = await requestedProvider(deps, request);
  const verified = await verifyResponse(read, {
    baseUrl: deps.config.baseUrl,
    keys,
    idp,
    clock: deps.clock,
    requestId: request.requestId,
  });
  if (!verified.ok) return rejectLogin(deps, request, 'saml', verified);
  return completeLogin(deps, {
    request,
    idp,
    protocol: 'saml',
    format: 'saml2-assertion',
    evidenceId: verified.assertionId,
    evidenceExpiresAt: new Date(Date.parse(verified.notOnOrAfter) + CLOCK_SKEW_MS).toISOString(),
    affiliation: verified.affiliation,
  });
}
