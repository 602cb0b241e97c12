import 'reflect-metadata'; // @peculiar/x509 resolves its parsers through tsyringe, which needs it loaded first
import { createHash, randomBytes, webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as x509 from '@peculiar/x509';
import { CompactEncrypt, compactVerify, exportJWK, importJWK } from 'jose';
import { setGlobalConfig, type CallbackContext, type Jwk } from '@openid4vc/oauth2';
import { Openid4vpClient, type Openid4vpAuthorizationRequest } from '@openid4vc/openid4vp';
import { isClaimName, type ClaimName } from '../domain/claims.ts';
import { presentCredential, issueSandboxCredential } from '../proofs/sd-jwt-vc/index.ts';
import { sdJwtVcBuilder } from '../proofs/sd-jwt-vc/builder.ts';
import type { SandboxStudent } from '../proofs/types.ts';

/**
 * The wallet simulator's OpenID4VP 1.0 side: it resolves an `openid4vpUri` as a standard wallet
 * does (Openid4vpClient from @openid4vc/openid4vp), checks the request object's x5c chain against
 * a trust anchor and its SAN against the client id, and answers with an SD-JWT VC presentation
 * in the response mode the request asks for.
 */

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

export interface Openid4vpAnswer {
  sessionId: string;
  /** The service's base URL, as the response_uri shows it. */
  baseUrl: string;
  /** The HTTP answer of the response endpoint. */
  status: number;
  body: { error?: string; error_description?: string; reason?: string; redirect_uri?: string };
}

export interface Openid4vpWalletOptions {
  uri: string;
  student: SandboxStudent;
  now: Date;
  /** PEM of the certificates to trust; default: the service's own (GET /openid4vp/v1/certificate), trusted on first use. */
  trustAnchorFile?: string;
  decline?: boolean;
  wrongNonce?: boolean;
  tamper?: boolean;
}

export function isOpenid4vpUri(uri: string): boolean {
  try {
    const url = new URL(uri);
    return (
      url.searchParams.has('client_id') && (url.searchParams.has('request_uri') || url.searchParams.has('response_uri'))
    );
  } catch {
    return false;
  }
}

/**
 * The service's BASE_URL, read off an openid4vpUri: its request_uri (or, unsigned, its
 * response_uri) is `{BASE_URL}/openid4vp/v1/sessions/…`. The simulator's credential points its
 * status entry at that service's sandbox status lists.
 */
export function serviceBaseOf(uri: string): string {
  const url = new URL(uri);
  const endpoint = new URL(url.searchParams.get('request_uri') ?? url.searchParams.get('response_uri') ?? '');
  const at = endpoint.pathname.indexOf('/openid4vp/v1/');
  return `${endpoint.origin}${at > 0 ? endpoint.pathname.slice(0, at) : ''}`;
}

function certificate(base64Der: string): x509.X509Certificate {
  return new x509.X509Certificate(Buffer.from(base64Der, 'base64'));
}

async function trustAnchors(options: Openid4vpWalletOptions): Promise<x509.X509Certificate[]> {
  let pem: string;
  if (options.trustAnchorFile) pem = readFileSync(options.trustAnchorFile, 'utf8');
  else {
    const requestUri = new URL(options.uri).searchParams.get('request_uri');
    if (!requestUri) return [];
    const response = await fetch(new URL('/openid4vp/v1/certificate', requestUri));
    if (!response.ok) throw new Error(`cannot fetch the service's certificate: HTTP ${response.status}`);
    pem = await response.text();
  }
  return x509.PemConverter.decode(pem).map((der) => new x509.X509Certificate(der));
}

function callbacks(anchors: x509.X509Certificate[]): Omit<CallbackContext, 'generateRandom' | 'clientAuthentication'> {
  return {
    fetch,
    hash: (data, alg) => createHash(alg.replace('-', '')).update(data).digest(),
    verifyJwt: async (signer, jwt) => {
      if (signer.method !== 'x5c') return { verified: false };
      const chain = signer.x5c.map(certificate);
      const built = await new x509.X509ChainBuilder({ certificates: [...chain.slice(1), ...anchors] }).build(chain[0]!);
      const root = built[built.length - 1]!;
      if (!anchors.some((anchor) => anchor.equal(root))) return { verified: false };
      for (let i = 0; i < built.length; i++)
        if (!(await built[i]!.verify({ publicKey: (built[i + 1] ?? root).publicKey, date: new Date() })))
          return { verified: false };
      const key = await chain[0]!.publicKey.export();
      try {
        await compactVerify(jwt.compact, key);
      } catch {
        return { verified: false };
      }
      return { verified: true, signerJwk: (await exportJWK(key)) as Jwk };
    },
    getX509CertificateMetadata: (base64Der) => {
      const names = certificate(base64Der).getExtension(x509.SubjectAlternativeNameExtension)?.names.items ?? [];
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
      throw new Error('the simulator signs no JWT through the library');
    },
    decryptJwe: () => {
      throw new Error('the simulator decrypts nothing');
    },
  };
}

/** The base URL and session id in a Matricula response_uri (`<base>/openid4vp/v1/sessions/<id>/response?…`). */
function sessionOf(responseUri: string): { baseUrl: string; sessionId: string } {
  const match = /^(.*)\/openid4vp\/v1\/sessions\/([^/?]+)\/response(\?|$)/.exec(responseUri);
  if (!match) throw new Error(`the response_uri is not a Matricula one: ${responseUri}`);
  return { baseUrl: match[1]!, sessionId: decodeURIComponent(match[2]!) };
}

/** Resolves the request, answers it (or declines), and returns the response endpoint's answer. */
export async function answerOpenid4vp(options: Openid4vpWalletOptions): Promise<Openid4vpAnswer> {
  const url = new URL(options.uri);
  // A development service on http:// (the library refuses it otherwise, as production wallets do).
  const requestUri = url.searchParams.get('request_uri') ?? url.searchParams.get('response_uri') ?? '';
  if (requestUri.startsWith('http://')) setGlobalConfig({ allowInsecureUrls: true });
  const client = new Openid4vpClient({ callbacks: callbacks(await trustAnchors(options)) });
  const resolved = await client.resolveOpenId4vpAuthorizationRequest({
    authorizationRequestPayload: Object.fromEntries(url.searchParams),
  });
  const resolvedRequest = resolved.authorizationRequestPayload as Openid4vpAuthorizationRequest;
  // A request passed by value (redirect_uri prefix) may keep its objects as the JSON text of the URI.
  const request: Openid4vpAuthorizationRequest = {
    ...resolvedRequest,
    ...(typeof resolvedRequest.client_metadata === 'string'
      ? { client_metadata: JSON.parse(resolvedRequest.client_metadata) as Record<string, unknown> }
      : {}),
  };
  if (!request.response_uri) throw new Error('the request has no response_uri');
  const { baseUrl, sessionId } = sessionOf(request.response_uri);
  const send = async (body: URLSearchParams | Record<string, unknown>, jarm?: string) => {
    const response = jarm
      ? await client.submitOpenid4vpAuthorizationResponse({
          authorizationRequestPayload: request,
          authorizationResponsePayload: body as never,
          jarm: { responseJwt: jarm },
        })
      : {
          response: await fetch(request.response_uri!, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: body as URLSearchParams,
          }),
        };
    return {
      sessionId,
      baseUrl,
      status: response.response.status,
      body: (await response.response.json()) as Openid4vpAnswer['body'],
    };
  };
  // The request's state comes back with every response, an error response too (OpenID4VP 1.0 §8).
  const state: Record<string, string> = request.state ? { state: request.state } : {};
  if (options.decline) return send(new URLSearchParams({ error: 'access_denied', ...state }));

  const rawQuery: unknown = resolved.dcql?.query ?? request.dcql_query;
  const query = (typeof rawQuery === 'string' ? JSON.parse(rawQuery) : rawQuery) as {
    credentials?: Array<{ id: string; meta?: { vct_values?: unknown }; claims?: Array<{ path: unknown[] }> }>;
  };
  // The simulator holds a StudentCredential: it answers the query that asks for one (any one of a set suffices).
  const queries = query?.credentials ?? [];
  const credentialQuery =
    queries.find((q) => Array.isArray(q.meta?.vct_values) && q.meta.vct_values.includes('StudentCredential')) ??
    queries[0];
  if (!credentialQuery) throw new Error('the request has no DCQL credential query');
  const disclose = (credentialQuery.claims ?? [])
    .map((claim) => claim.path[0])
    .filter((name): name is ClaimName => typeof name === 'string' && isClaimName(name));
  const credential = await issueSandboxCredential(options.student, options.now);
  let presentation: string = await presentCredential(credential, options.student.holderSeed, {
    nonce: options.wrongNonce ? randomBytes(32).toString('base64url') : request.nonce,
    audience: request.client_id,
    now: options.now,
    disclose,
  });
  if (options.tamper) presentation = sdJwtVcBuilder.tamper(presentation) as string;

  const encrypted = request.response_mode === 'direct_post.jwt';
  const created = await client.createOpenid4vpAuthorizationResponse({
    authorizationRequestPayload: request,
    authorizationResponsePayload: { vp_token: { [credentialQuery.id]: [presentation] } },
    ...(encrypted
      ? {
          jarm: {
            encryption: { nonce: randomBytes(16).toString('base64url') },
            serverMetadata: {
              authorization_signing_alg_values_supported: ['ES256'],
              authorization_encryption_alg_values_supported: ['ECDH-ES'],
              authorization_encryption_enc_values_supported: ['A256GCM', 'A128GCM'],
            },
          },
        }
      : {}),
  });
  if (created.jarm) return send(created.authorizationResponsePayload, created.jarm.responseJwt);
  return send(
    new URLSearchParams({ vp_token: JSON.stringify(created.authorizationResponsePayload.vp_token), ...state }),
  );
}
