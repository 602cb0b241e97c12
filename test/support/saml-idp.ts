import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import samlifyModule from 'samlify';
import { DOMParser, XMLSerializer } from '@xmldom/xmldom';
import { generateSamlKeyPair } from '../../src/services/sso/saml/sp-keys.ts';

/**
 * A SAML 2.0 identity provider we did not write: samlify in IdP mode, behind a small login page on
 * 127.0.0.1. It verifies our signed AuthnRequest (HTTP-Redirect) against our SP metadata, and
 * answers with a signed (optionally encrypted) response carrying eduPersonScopedAffiliation.
 * `respond` builds responses directly, with any field changed, for the refusal tests.
 */
// samlify is CommonJS: under Node's interop its named exports (SamlLib among them) are on the default.
const samlify = samlifyModule as unknown as typeof import('samlify');
// samlify wants a schema validator for what it receives. The xmllint one (emscripten) registers
// process listeners on every call and writes to stdout, which corrupts the test runner's channel;
// this one insists on well-formed XML with the element samlify expects at the root.
samlify.setSchemaValidator({
  validate: async (xml: string) => {
    const errors: string[] = [];
    const doc = new DOMParser({
      errorHandler: { error: (e: string) => errors.push(e), fatalError: (e: string) => errors.push(e) },
    }).parseFromString(xml, 'text/xml');
    if (errors.length > 0 || !doc.documentElement) throw new Error(`not well-formed: ${errors.join('; ')}`);
    return 'well-formed';
  },
});

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const SHIBMD = 'urn:mace:shibboleth:metadata:1.0';
const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
const SCOPED_AFFILIATION = 'urn:oid:1.3.6.1.4.1.5923.1.1.1.9';

export interface TestIdpOptions {
  /** shibmd:Scope of its metadata. */
  scope?: string;
  encrypt?: boolean;
  signatureAlgorithm?: string;
  /** Another IdP's entity id: same name, other key (the "other IdP's key" test). */
  entityId?: string;
}

export interface LoginRequest {
  id: string;
  relayState: string;
}

export interface ResponseFields {
  affiliation?: string;
  audience?: string;
  destination?: string;
  recipient?: string;
  inResponseTo?: string;
  notBefore?: Date;
  notOnOrAfter?: Date;
  issuer?: string;
}

export interface TestIdp {
  origin: string;
  entityId: string;
  metadataXml: string;
  /** Parses a redirect-binding AuthnRequest URL (verifying our signature), as the IdP's SSO endpoint does. */
  parseRequest(url: string): Promise<LoginRequest>;
  /** A base64 SAMLResponse for `request`. */
  respond(request: LoginRequest, fields?: ResponseFields): Promise<string>;
  close(): Promise<void>;
}

function withScope(metadataXml: string, scope: string): string {
  const doc = new DOMParser().parseFromString(metadataXml, 'text/xml');
  const idp = doc.getElementsByTagNameNS(MD, 'IDPSSODescriptor')[0]!;
  const extensions = doc.createElementNS(MD, 'md:Extensions');
  const element = doc.createElementNS(SHIBMD, 'shibmd:Scope');
  element.setAttribute('regexp', 'false');
  element.appendChild(doc.createTextNode(scope));
  extensions.appendChild(element);
  idp.insertBefore(extensions, idp.firstChild);
  return new XMLSerializer().serializeToString(doc);
}

function form(action: string, fields: Record<string, string>): string {
  const inputs = Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${value.replace(/"/g, '&quot;')}">`)
    .join('');
  return `<!doctype html><html><body><form method="post" action="${action}">${inputs}<button type="submit">Continue</button></form><script>document.forms[0].submit()</script></body></html>`;
}

/** Starts the IdP; `spMetadata` is our SP's metadata as served at /saml/v1/metadata. */
export async function startTestIdp(spMetadata: string, options: TestIdpOptions = {}): Promise<TestIdp> {
  const keys = await generateSamlKeyPair('Test IdP', new Date());
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const entityId = options.entityId ?? `${origin}/idp`;
  const sp = samlify.ServiceProvider({ metadata: spMetadata });
  const idp = samlify.IdentityProvider({
    entityID: entityId,
    signingCert: keys.certificatePem,
    privateKey: keys.privateKeyPem,
    wantAuthnRequestsSigned: true,
    isAssertionEncrypted: options.encrypt ?? false,
    requestSignatureAlgorithm: options.signatureAlgorithm ?? RSA_SHA256,
    nameIDFormat: ['urn:oasis:names:tc:SAML:2.0:nameid-format:transient'],
    singleSignOnService: [{ Binding: samlify.Constants.namespace.binding.redirect, Location: `${origin}/sso` }],
    loginResponseTemplate: {
      context: samlify.SamlLib.defaultLoginResponseTemplate.context,
      attributes: [
        {
          name: SCOPED_AFFILIATION,
          nameFormat: 'urn:oasis:names:tc:SAML:2.0:attrname-format:uri',
          valueTag: 'affiliation',
          valueXsiType: 'xs:string',
        },
      ],
    } as never,
  });
  const metadataXml = withScope(idp.getMetadata(), options.scope ?? 'uni.test');
  const acs = sp.entityMeta.getAssertionConsumerService('post') as string;

  const respond = async (request: LoginRequest, fields: ResponseFields = {}): Promise<string> => {
    const now = new Date();
    const notBefore = fields.notBefore ?? now;
    const notOnOrAfter = fields.notOnOrAfter ?? new Date(now.getTime() + 5 * 60_000);
    const response = await idp.createLoginResponse(
      sp,
      { extract: { request: { id: request.id } } } as never,
      'post',
      {},
      {
        relayState: request.relayState,
        customTagReplacement: (template: string) => {
          const id = `_${randomBytes(16).toString('hex')}`;
          const context = samlify.SamlLib.replaceTagsByValue(template, {
            ID: id,
            AssertionID: `_${randomBytes(16).toString('hex')}`,
            Destination: fields.destination ?? acs,
            Audience: fields.audience ?? sp.entityMeta.getEntityID(),
            EntityID: sp.entityMeta.getEntityID(),
            SubjectRecipient: fields.recipient ?? acs,
            Issuer: fields.issuer ?? entityId,
            IssueInstant: now.toISOString(),
            StatusCode: 'urn:oasis:names:tc:SAML:2.0:status:Success',
            ConditionsNotBefore: notBefore.toISOString(),
            ConditionsNotOnOrAfter: notOnOrAfter.toISOString(),
            SubjectConfirmationDataNotOnOrAfter: notOnOrAfter.toISOString(),
            NameIDFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
            NameID: `_${randomBytes(12).toString('hex')}`,
            InResponseTo: fields.inResponseTo ?? request.id,
            AuthnStatement: '',
            attrAffiliation: fields.affiliation ?? 'student@uni.test',
          });
          return { id, context };
        },
      } as never,
    );
    return (response as { context: string }).context;
  };

  const parseRequest = async (url: string): Promise<LoginRequest> => {
    const parsed = new URL(url);
    const raw = parsed.search.slice(1);
    const octetString = raw
      .split('&')
      .filter((pair) => !pair.startsWith('Signature='))
      .join('&');
    // Values decoded, as a web framework hands them over; the signature is over the raw octets.
    const query = Object.fromEntries(new URLSearchParams(raw));
    const result = await idp.parseLoginRequest(sp, 'redirect', { query, octetString } as never);
    const id = (result.extract as { request: { id: string } }).request.id;
    return { id, relayState: query.RelayState ?? '' };
  };

  // The login page: two accounts; the answer is posted to our ACS by the page (script, or the button).
  const pending = new Map<string, LoginRequest>();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const url = new URL(req.url ?? '/', origin);
      if (req.method === 'GET' && url.pathname === '/sso') {
        const request = await parseRequest(url.href);
        const ticket = randomBytes(8).toString('hex');
        pending.set(ticket, request);
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(
          `<!doctype html><html><head><title>Test University login</title></head><body><h1>Test University</h1>` +
            `<form method="post" action="/login"><input type="hidden" name="ticket" value="${ticket}">` +
            `<button name="account" value="student">Sign in as student</button>` +
            `<button name="account" value="staff">Sign in as staff</button></form></body></html>`,
        );
        return;
      }
      if (req.method === 'POST' && url.pathname === '/login') {
        let body = '';
        for await (const chunk of req) body += chunk;
        const params = new URLSearchParams(body);
        const request = pending.get(params.get('ticket') ?? '');
        if (!request) {
          res.writeHead(400).end('unknown ticket');
          return;
        }
        pending.delete(params.get('ticket')!);
        const scope = options.scope ?? 'uni.test';
        const samlResponse = await respond(request, { affiliation: `${params.get('account')}@${scope}` });
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(form(acs, { SAMLResponse: samlResponse, RelayState: request.relayState }));
        return;
      }
      res.writeHead(404).end();
    })().catch((err: unknown) => {
      res.writeHead(500).end(String(err));
    });
  });

  return {
    origin,
    entityId,
    metadataXml,
    parseRequest,
    respond,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
