import 'reflect-metadata';
import { createHash, createPrivateKey, sign, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { CompactEncrypt, compactVerify, exportJWK, importJWK, SignJWT } from 'jose';
import {
  Openid4vpClient,
  type Openid4vpAuthorizationRequest,
  type ResolvedOpenid4vpAuthorizationRequest,
} from '@openid4vc/openid4vp';
import { setGlobalConfig, type CallbackContext, type Jwk } from '@openid4vc/oauth2';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { digest } from '@sd-jwt/crypto-nodejs';

/**
 * An independent OpenID4VP holder for the interop tests, built only from libraries we did not
 * write: Openid4vpClient (@openid4vc/openid4vp) resolves and answers, @peculiar/x509 checks the
 * request's x5c chain against the anchors it trusts, jose does JWS/JWE, @sd-jwt presents. It
 * imports nothing from src/: what it accepts, any standard wallet on these libraries accepts.
 */

x509.cryptoProvider.set(webcrypto as unknown as Crypto);
// The services under test listen on http://127.0.0.1: a wallet in development mode.
setGlobalConfig({ allowInsecureUrls: true });

/** A `matricula wallet credential --json` export. */
export interface ExportedCredential {
  credential: string;
  holderPrivateJwk: Record<string, string>;
}

function certificate(base64Der: string): x509.X509Certificate {
  return new x509.X509Certificate(Buffer.from(base64Der, 'base64'));
}

export function holderCallbacks(
  trustAnchorsPem: string[],
): Omit<CallbackContext, 'generateRandom' | 'clientAuthentication'> {
  const anchors = trustAnchorsPem.flatMap((pem) =>
    x509.PemConverter.decode(pem).map((der) => new x509.X509Certificate(der)),
  );
  return {
    fetch,
    hash: (data, alg) => createHash(alg.replace('-', '')).update(data).digest(),
    // The request object: a chain that ends at a trusted anchor, and a signature by its leaf.
    verifyJwt: async (signer, jwt) => {
      if (signer.method !== 'x5c') return { verified: false };
      const chain = signer.x5c.map(certificate);
      const leaf = chain[0]!;
      const built = await new x509.X509ChainBuilder({ certificates: [...chain.slice(1), ...anchors] }).build(leaf);
      const root = built[built.length - 1]!;
      if (!anchors.some((anchor) => anchor.equal(root))) return { verified: false };
      for (let i = 0; i < built.length; i++) {
        const issuer = built[i + 1] ?? root;
        if (!(await built[i]!.verify({ publicKey: issuer.publicKey, date: new Date() }))) return { verified: false };
      }
      const key = await leaf.publicKey.export();
      try {
        await compactVerify(jwt.compact, key);
      } catch {
        return { verified: false };
      }
      return { verified: true, signerJwk: (await exportJWK(key)) as Jwk };
    },
    getX509CertificateMetadata: (base64Der) => {
      const san = certificate(base64Der).getExtension(x509.SubjectAlternativeNameExtension);
      const names = san?.names.items ?? [];
      return {
        sanDnsNames: names.filter((n) => n.type === 'dns').map((n) => n.value),
        sanUriNames: names.filter((n) => n.type === 'url').map((n) => n.value),
      };
    },
    encryptJwe: async (encryptor, data) => {
      const key = await importJWK(encryptor.publicJwk as JsonWebKey, encryptor.alg);
      const jwe = await new CompactEncrypt(new TextEncoder().encode(data))
        .setProtectedHeader({ alg: encryptor.alg, enc: encryptor.enc, kid: encryptor.publicJwk.kid })
        .setKeyManagementParameters({
          ...(encryptor.apu ? { apu: Buffer.from(encryptor.apu, 'base64url') } : {}),
          ...(encryptor.apv ? { apv: Buffer.from(encryptor.apv, 'base64url') } : {}),
        })
        .encrypt(key);
      return { encryptionJwk: encryptor.publicJwk, jwe };
    },
    signJwt: () => {
      throw new Error('the holder signs no JWT through the library');
    },
    decryptJwe: () => {
      throw new Error('the holder decrypts nothing');
    },
  };
}

export function holderClient(trustAnchorsPem: string[]): Openid4vpClient {
  return new Openid4vpClient({ callbacks: holderCallbacks(trustAnchorsPem) });
}

/** Parses `openid4vp://?…` into the parameters the client resolves. */
export function uriParameters(uri: string): Record<string, string> {
  return Object.fromEntries(new URL(uri).searchParams);
}

export interface PresentOptions {
  /** Claims to disclose; default: every claim path of the DCQL query. */
  disclose?: string[];
  nonce?: string;
  aud?: string;
  iat?: number;
  /** Alter a disclosed value after presenting. */
  tamper?: boolean;
}

/** The vp_token's presentation: the exported credential with a KB-JWT made with the exported holder key. */
export async function presentFromExport(
  exported: ExportedCredential,
  resolved: ResolvedOpenid4vpAuthorizationRequest,
  options: PresentOptions = {},
): Promise<string> {
  const key = createPrivateKey({ key: exported.holderPrivateJwk, format: 'jwk' });
  const holder = new SDJwtVcInstance({
    hasher: digest,
    hashAlg: 'sha-256',
    kbSigner: (data: string) =>
      sign('sha256', Buffer.from(data), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url'),
    kbSignAlg: 'ES256',
  });
  const query = resolved.dcql?.query as { credentials: Array<{ claims: Array<{ path: string[] }> }> };
  const claims = options.disclose ?? query.credentials[0]!.claims.map((c) => c.path[0]!);
  const presentation = await holder.present(exported.credential, Object.fromEntries(claims.map((c) => [c, true])), {
    kb: {
      payload: {
        iat: options.iat ?? Math.floor(Date.now() / 1000),
        aud: options.aud ?? resolved.authorizationRequestPayload.client_id!,
        nonce: options.nonce ?? resolved.authorizationRequestPayload.nonce,
      },
    },
  });
  if (!options.tamper) return presentation;
  const parts = presentation.split('~');
  const index = parts.findIndex(
    (part, i) => i > 0 && Buffer.from(part, 'base64url').toString().includes('is_active_student'),
  );
  const [salt, name] = JSON.parse(Buffer.from(parts[index]!, 'base64url').toString()) as [string, string, unknown];
  parts[index] = Buffer.from(JSON.stringify([salt, name, false])).toString('base64url');
  return parts.join('~');
}

/**
 * A `jwt_vc_json` answer: a Verifiable Presentation JWT (VCDM 1.1 JWT encoding) holding the W3C
 * credential JWT, signed with jose by the holder's key, its `iss` the holder's `did:jwk`, bound to
 * the request's `nonce` and `client_id`.
 */
export async function presentJwtVcJson(
  credential: string,
  holderPrivateJwk: JsonWebKey,
  resolved: ResolvedOpenid4vpAuthorizationRequest,
  options: Pick<PresentOptions, 'nonce' | 'aud' | 'iat'> = {},
): Promise<string> {
  const { kty, crv, x, y } = holderPrivateJwk;
  const did = `did:jwk:${Buffer.from(JSON.stringify({ kty, crv, x, y })).toString('base64url')}`;
  const key = await importJWK(holderPrivateJwk as Parameters<typeof importJWK>[0], 'ES256');
  return new SignJWT({
    nonce: options.nonce ?? resolved.authorizationRequestPayload.nonce,
    vp: {
      '@context': ['https://www.w3.org/2018/credentials/v1'],
      type: ['VerifiablePresentation'],
      verifiableCredential: [credential],
    },
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: `${did}#0` })
    .setIssuer(did)
    .setAudience(options.aud ?? resolved.authorizationRequestPayload.client_id!)
    .setIssuedAt(options.iat ?? Math.floor(Date.now() / 1000))
    .sign(key);
}

/** Answers the resolved request with `presentation` in the response mode it asks for; returns the HTTP answer. */
export async function submit(
  client: Openid4vpClient,
  resolved: ResolvedOpenid4vpAuthorizationRequest,
  vpToken: Record<string, string[]>,
  options: { encrypt?: boolean } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const request = resolved.authorizationRequestPayload as Openid4vpAuthorizationRequest;
  const encrypt = options.encrypt ?? request.response_mode === 'direct_post.jwt';
  const created = await client.createOpenid4vpAuthorizationResponse({
    authorizationRequestPayload: encrypt ? request : { ...request, response_mode: 'direct_post' },
    authorizationResponsePayload: { vp_token: vpToken },
    ...(encrypt
      ? {
          jarm: {
            encryption: { nonce: 'holder-nonce' },
            serverMetadata: {
              authorization_signing_alg_values_supported: ['ES256'],
              authorization_encryption_alg_values_supported: ['ECDH-ES'],
              authorization_encryption_enc_values_supported: ['A256GCM', 'A128GCM'],
            },
          },
        }
      : {}),
  });
  const { response } = await client.submitOpenid4vpAuthorizationResponse({
    authorizationRequestPayload: request,
    authorizationResponsePayload: created.authorizationResponsePayload,
    ...(created.jarm ? { jarm: { responseJwt: created.jarm.responseJwt } } : {}),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}
