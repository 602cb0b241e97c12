import type { Config } from '../../config.ts';
import { invalidRequest, Openid4vpError } from './open-request.ts';

/**
 * The `wallet_metadata` a wallet POSTs to the request_uri (OpenID4VP 1.0 §5.10): what it can
 * verify and answer. Anything the request cannot meet is refused with an OAuth error saying what;
 * what it tells the request (its `issuer`, the request object's `aud`) is returned.
 */
export interface WalletMetadataUse {
  /** The request object's `aud`: the wallet's `issuer`, else the static `https://self-issued.me/v2`. */
  audience: string;
}

export const STATIC_WALLET_AUDIENCE = 'https://self-issued.me/v2';

export function useWalletMetadata(config: Config, raw: string | undefined): WalletMetadataUse {
  if (raw === undefined) return { audience: STATIC_WALLET_AUDIENCE };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw invalidRequest('wallet_metadata is not JSON.');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw invalidRequest('wallet_metadata is not a JSON object.');
  const metadata = parsed as Record<string, unknown>;
  const algs = metadata.request_object_signing_alg_values_supported;
  if (Array.isArray(algs) && !algs.includes('ES256'))
    throw invalidRequest('This verifier signs requests with ES256, which the wallet_metadata does not list.');
  const formats = metadata.vp_formats_supported;
  if (typeof formats === 'object' && formats !== null && !Object.hasOwn(formats, 'dc+sd-jwt'))
    throw new Openid4vpError(
      400,
      'vp_formats_not_supported',
      'This verifier asks for a dc+sd-jwt credential, which the wallet_metadata does not list.',
    );
  const prefix = config.openid4vp.clientIdPrefix;
  const prefixes = metadata.client_id_prefixes_supported;
  if (Array.isArray(prefixes) && !prefixes.includes(prefix))
    throw new Openid4vpError(
      400,
      'invalid_client',
      `This verifier identifies itself with the ${prefix} client identifier prefix, which the wallet_metadata ` +
        `client_id_prefixes_supported does not list (${prefixes.map(String).join(', ').slice(0, 200) || 'none'}).`,
    );
  const issuer = metadata.issuer;
  return { audience: typeof issuer === 'string' && issuer.length > 0 ? issuer : STATIC_WALLET_AUDIENCE };
}
