import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK, type JWTPayload } from 'jose';
import Provider from 'oidc-provider';

/**
 * panva's oidc-provider (npm), an OpenID provider we did not write, on 127.0.0.1: one confidential
 * client (our redirect_uri), devInteractions for the login page (any password), and accounts that
 * release `eduperson_scoped_affiliation`. `tamper` rewrites the ID token of the next token
 * responses (re-signed with the provider's key, or `signingKey`): the refusal tests' forgeries.
 */
export const OP_CLIENT_ID = 'matricula-test';
export const OP_CLIENT_SECRET = 'test-client-secret-0123456789abcdef';

export const OP_ACCOUNTS: Record<string, string[]> = {
  student: ['student@uni.test', 'member@uni.test'],
  staff: ['staff@uni.test', 'member@uni.test'],
  outsider: ['student@other-university.test'],
  nothing: [],
};

export interface Tamper {
  claims?: (claims: JWTPayload) => JWTPayload;
  /** Sign with this key instead of the provider's (its kid is kept, so the key selection finds one). */
  signingKey?: CryptoKey;
}

export interface TestOp {
  issuer: string;
  privateJwk: JWK;
  tamper: Tamper | undefined;
  /** The ID tokens the provider (or `tamper`) issued, newest last. */
  idTokens: string[];
  /** How many requests reached the token endpoint (answered or refused). */
  tokenRequests: number;
  close(): Promise<void>;
}

export async function startTestOp(redirectUri: string): Promise<TestOp> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const privateJwk = { ...(await exportJWK(privateKey)), kid: 'op-key-1', alg: 'RS256', use: 'sig' };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: OP_CLIENT_ID,
        client_secret: OP_CLIENT_SECRET,
        redirect_uris: [redirectUri],
        response_types: ['code'],
        grant_types: ['authorization_code'],
      },
    ],
    jwks: { keys: [privateJwk] },
    cookies: { keys: ['test-cookie-key'] },
    scopes: ['openid', 'eduperson_scoped_affiliation'],
    claims: { openid: ['sub'], eduperson_scoped_affiliation: ['eduperson_scoped_affiliation'] },
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: true }, claimsParameter: { enabled: true } },
    // `student` or `student.anything` (a distinctive sub, to look for it where it must not be).
    findAccount: (_ctx, id) => {
      const kind = id.split('.')[0]!;
      return Object.hasOwn(OP_ACCOUNTS, kind)
        ? { accountId: id, claims: () => ({ sub: id, eduperson_scoped_affiliation: OP_ACCOUNTS[kind]! }) }
        : undefined;
    },
    // The student consents once at their university; no consent page in these tests.
    async loadExistingGrant(ctx) {
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client!.clientId,
        accountId: ctx.oidc.session!.accountId,
      });
      grant.addOIDCScope('openid eduperson_scoped_affiliation');
      grant.addOIDCClaims(['eduperson_scoped_affiliation']);
      await grant.save();
      return grant;
    },
  });
  const op: TestOp = {
    issuer,
    privateJwk,
    tamper: undefined,
    idTokens: [],
    tokenRequests: 0,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.path === '/token') op.tokenRequests += 1;
    const body = ctx.body as { id_token?: string } | undefined;
    if (ctx.path !== '/token' || !body?.id_token) return;
    if (op.tamper) {
      const claims = op.tamper.claims ? op.tamper.claims(decodeJwt(body.id_token)) : decodeJwt(body.id_token);
      const key = op.tamper.signingKey ?? (await importJWK(privateJwk, 'RS256'));
      body.id_token = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: privateJwk.kid!, typ: 'JWT' })
        .sign(key);
    }
    op.idTokens.push(body.id_token);
  });
  const handle = provider.callback();
  server.on('request', (req, res) => void handle(req, res));
  return op;
}

/**
 * A browser with one cookie jar (cookies of 127.0.0.1 are shared across ports, as in a browser):
 * the service's binding cookie and the provider's interaction cookies.
 */
export class OidcBrowser {
  readonly jar = new Map<string, string>();

  async get(url: string): Promise<Response> {
    return this.#keep(await fetch(url, { redirect: 'manual', headers: this.#headers() }));
  }

  async post(url: string, form: Record<string, string>): Promise<Response> {
    return this.#keep(
      await fetch(url, {
        method: 'POST',
        redirect: 'manual',
        headers: { ...this.#headers(), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form),
      }),
    );
  }

  /**
   * Follows the provider's redirects from `location` (the authorization request), signs in as
   * `account` on its login page, and returns the redirect to our callback (not followed).
   */
  async loginAt(location: string, account: string, callbackPrefix: string): Promise<string> {
    let url = location;
    for (let hops = 0; hops < 10; hops++) {
      if (url.startsWith(callbackPrefix)) return url;
      const res = await this.get(url);
      if (res.status >= 300 && res.status < 400) {
        url = new URL(res.headers.get('location')!, url).href;
        continue;
      }
      const page = await res.text();
      assert.equal(res.status, 200, page.slice(0, 400));
      const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1];
      assert.ok(action, `no login form: ${page.slice(0, 400)}`);
      const posted = await this.post(new URL(action, url).href, { prompt: 'login', login: account, password: 'x' });
      assert.ok(posted.status >= 300 && posted.status < 400, `login answered ${posted.status}`);
      url = new URL(posted.headers.get('location')!, url).href;
    }
    throw new Error('too many redirects at the provider');
  }

  #headers(): Record<string, string> {
    return this.jar.size ? { cookie: [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ') } : {};
  }

  #keep(res: Response): Response {
    for (const set of res.headers.getSetCookie()) {
      const [pair] = set.split(';');
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at).trim();
      const value = pair!.slice(at + 1);
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(set) || value === '') this.jar.delete(name);
      else this.jar.set(name, value);
    }
    return res;
  }
}
