import type { ServiceDeps } from '../deps.ts';
import { spMetadataXml } from './saml/service-provider.ts';

/** This service provider's SAML metadata (GET /saml/v1/metadata). */
export async function spMetadata(deps: Pick<ServiceDeps, 'config' | 'samlKeys'>): Promise<string> {
  return spMetadataXml({
    baseUrl: deps.config.baseUrl,
    keys: await deps.samlKeys(),
    displayName: deps.config.universityLogin.spDisplayName,
  });
}
