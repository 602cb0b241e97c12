import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DOMParser, XMLSerializer } from '@xmldom/xmldom';
import { forEachDialect } from '../support/harness.ts';
import { getSession } from '../support/sessions.ts';
import { startTestIdp, type LoginRequest, type TestIdp } from '../support/saml-idp.ts';
import {
  registeredIdp,
  sandboxSession,
  startLoginWorld,
  TestBrowser,
  type LoginWorld,
} from '../support/university-login.ts';

const SAML = 'urn:oasis:names:tc:SAML:2.0:assertion';
const SAMLP = 'urn:oasis:names:tc:SAML:2.0:protocol';
const DS = 'http://www.w3.org/2000/09/xmldsig#';
const MAX_RESPONSE_BYTES = 65_536;

const decode = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');
const encode = (xml: string) => Buffer.from(xml, 'utf8').toString('base64');
const parse = (xml: string) => new DOMParser().parseFromString(xml, 'text/xml');
const serialize = (doc: Document) => new XMLSerializer().serializeToString(doc);

/** The signed assertion of a response, and a forged copy of it (student, no signature, its own ID). */
function pieces(xml: string) {
  const doc = parse(xml) as unknown as Document;
  const response = doc.documentElement;
  const signed = doc.getElementsByTagNameNS(SAML, 'Assertion')[0]!;
  const evil = signed.cloneNode(true) as Element;
  for (const signature of Array.from(evil.getElementsByTagNameNS(DS, 'Signature')))
    signature.parentNode!.removeChild(signature);
  for (const value of Array.from(evil.getElementsByTagNameNS(SAML, 'AttributeValue')))
    value.textContent = 'student@uni.test';
  evil.setAttribute('ID', '_evil');
  return { doc, response, signed, evil };
}

/** XML signature wrapping: the signed (staff) assertion kept somewhere, a forged student one where an SP might read. */
const WRAPPING: Record<string, (xml: string) => string> = {
  'forged assertion before the signed one': (xml) => {
    const { doc, response, signed, evil } = pieces(xml);
    response.insertBefore(evil, signed);
    return serialize(doc);
  },
  'forged assertion after the signed one': (xml) => {
    const { doc, response, evil } = pieces(xml);
    response.appendChild(evil);
    return serialize(doc);
  },
  'signed assertion wrapped inside the forged one': (xml) => {
    const { doc, response, signed, evil } = pieces(xml);
    response.replaceChild(evil, signed);
    evil.appendChild(signed);
    return serialize(doc);
  },
  'signed assertion in the Response Extensions, forged one in its place': (xml) => {
    const { doc, response, signed, evil } = pieces(xml);
    const extensions = doc.createElementNS(SAMLP, 'samlp:Extensions');
    response.replaceChild(evil, signed);
    extensions.appendChild(signed);
    response.insertBefore(extensions, response.firstChild!.nextSibling);
    return serialize(doc);
  },
  'forged assertion carrying the signature, signed one in its ds:Object': (xml) => {
    const { doc, response, signed, evil } = pieces(xml);
    const signature = signed.getElementsByTagNameNS(DS, 'Signature')[0]!.cloneNode(true) as Element;
    const object = doc.createElementNS(DS, 'ds:Object');
    object.appendChild(signed.cloneNode(true));
    signature.appendChild(object);
    evil.insertBefore(signature, evil.firstChild!.nextSibling);
    response.replaceChild(evil, signed);
    return serialize(doc);
  },
  'forged assertion with the signed one’s ID': (xml) => {
    const { doc, response, signed, evil } = pieces(xml);
    evil.setAttribute('ID', signed.getAttribute('ID')!);
    response.insertBefore(evil, signed);
    return serialize(doc);
  },
  'signature moved onto the forged assertion': (xml) => {
    const { doc, response, signed, evil } = pieces(xml);
    const signature = signed.getElementsByTagNameNS(DS, 'Signature')[0]!;
    evil.setAttribute('ID', signed.getAttribute('ID')!);
    evil.insertBefore(signature, evil.firstChild!.nextSibling);
    response.replaceChild(evil, signed);
    return serialize(doc);
  },
  'signed assertion under a forged Response-level Signature, forged assertion beside': (xml) => {
    const { doc, response, signed, evil } = pieces(xml);
    const signature = doc.createElementNS(DS, 'ds:Signature');
    const object = doc.createElementNS(DS, 'ds:Object');
    response.replaceChild(evil, signed);
    object.appendChild(signed);
    signature.appendChild(object);
    response.insertBefore(signature, response.firstChild!.nextSibling);
    return serialize(doc);
  },
  'comment splitting the signed value (a truncating reader would see student@uni.test)': (xml) =>
    xml.replace('student@uni.test.evil.example', 'student@uni.test<!---->.evil.example'),
};

forEachDialect('university login refusals', (dialect) => {
  let world: LoginWorld;
  let idp: TestIdp;
  let impostor: TestIdp;
  let sha1Idp: TestIdp;
  before(async () => {
    world = await startLoginWorld(dialect, { SAML_MAX_RESPONSE_BYTES: String(MAX_RESPONSE_BYTES) });
    idp = await registeredIdp(world);
    sha1Idp = await registeredIdp(world, {
      signatureAlgorithm: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1',
      scope: 'sha1.test',
    });
    // Same entityID as the registered IdP, its own key: not in any metadata we trust.
    impostor = await startTestIdp(world.spMetadata, { entityId: idp.entityId });
  });
  after(async () => {
    await idp?.close();
    await sha1Idp?.close();
    await impostor?.close();
    await world?.close();
  });

  /** A session, a browser that started its login at `target`, and the request the IdP received. */
  const started = async (target: TestIdp = idp) => {
    const session = await sandboxSession(world);
    const browser = new TestBrowser();
    const res = await browser.start(world, session, target.entityId);
    assert.equal(res.status, 302);
    const request = await target.parseRequest(res.headers.get('location')!);
    return { session, browser, request };
  };

  const assertRefused = async (res: Response, reason: string, sessionId: string) => {
    const page = await res.text();
    assert.equal(res.status, 400, page.slice(0, 400));
    assert.equal(res.headers.get('x-matricula-rejection-reason'), reason, page.slice(0, 600));
    const read = (await getSession(world.h, world.tenant, sessionId)).json().data;
    assert.ok(read.status !== 'completed' || read.result.verified === false, 'the session must not be verified');
  };

  const refusedWith = async (reason: string, make: (request: LoginRequest) => Promise<string>, target?: TestIdp) => {
    const { session, browser, request } = await started(target);
    await assertRefused(await browser.postToAcs(world, await make(request)), reason, session.sessionId);
  };

  test('a replayed response is refused as a replay', async () => {
    const { session, browser, request } = await started();
    const response = await idp.respond(request);
    assert.equal((await browser.postToAcs(world, response)).status, 303);
    const replay = await browser.postToAcs(world, response);
    assert.equal(replay.status, 400);
    assert.equal(replay.headers.get('x-matricula-rejection-reason'), 'assertion_replayed');
    assert.equal((await getSession(world.h, world.tenant, session.sessionId)).json().data.result.verified, true);
  });

  test('wrong audience', () =>
    refusedWith('audience_mismatch', (r) => idp.respond(r, { audience: 'https://other.example/sp' })));

  test('expired assertion', () =>
    refusedWith('stale_presentation', (r) =>
      idp.respond(r, { notBefore: new Date(Date.now() - 600_000), notOnOrAfter: new Date(Date.now() - 120_000) }),
    ));

  test('not yet valid beyond the 60 s skew', () =>
    refusedWith('stale_presentation', (r) =>
      idp.respond(r, { notBefore: new Date(Date.now() + 300_000), notOnOrAfter: new Date(Date.now() + 600_000) }),
    ));

  test('unsigned assertion', () =>
    refusedWith('invalid_signature', async (r) => {
      const doc = parse(decode(await idp.respond(r))) as unknown as Document;
      for (const s of Array.from(doc.getElementsByTagNameNS(DS, 'Signature'))) s.parentNode!.removeChild(s);
      return encode(serialize(doc));
    }));

  test("a signature by another IdP's key", () => refusedWith('invalid_signature', (r) => impostor.respond(r)));

  test("a scope outside the IdP's shibmd:Scope", () =>
    refusedWith('untrusted_issuer', (r) => idp.respond(r, { affiliation: 'student@other-university.test' })));

  test('a tampered attribute', () =>
    refusedWith('invalid_signature', async (r) =>
      encode(
        decode(await idp.respond(r, { affiliation: 'staff@uni.test' })).replace('staff@uni.test', 'student@uni.test'),
      ),
    ));

  test('SHA-1 signatures are refused', () => refusedWith('algorithm_not_allowed', (r) => sha1Idp.respond(r), sha1Idp));

  test('a Destination other than our ACS', () =>
    refusedWith('audience_mismatch', (r) => idp.respond(r, { destination: 'https://other.example/acs' })));

  test('a SubjectConfirmation for another recipient', () =>
    refusedWith('audience_mismatch', (r) => idp.respond(r, { recipient: 'https://other.example/acs' })));

  for (const [name, wrap] of Object.entries(WRAPPING))
    test(`signature wrapping: ${name}`, async () => {
      const { session, browser, request } = await started();
      const affiliation = name.startsWith('comment') ? 'student@uni.test.evil.example' : 'staff@uni.test';
      const forged = wrap(decode(await idp.respond(request, { affiliation })));
      const res = await browser.postToAcs(world, encode(forged));
      const page = await res.text();
      assert.equal(res.status, 400, page.slice(0, 400));
      assert.ok(
        ['invalid_signature', 'malformed_presentation', 'untrusted_issuer'].includes(
          res.headers.get('x-matricula-rejection-reason') ?? '',
        ),
        `reason ${res.headers.get('x-matricula-rejection-reason')}`,
      );
      const read = (await getSession(world.h, world.tenant, session.sessionId)).json().data;
      assert.notEqual(read.status, 'completed');
    });

  test('a DTD with entity expansion is refused before parsing', () =>
    refusedWith('malformed_presentation', async (r) => {
      const xml = decode(await idp.respond(r));
      const laughs =
        '<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>';
      return encode(xml.replace(/^(<\?xml[^>]*\?>)?/, `$1${laughs}`).replace('student@uni.test', '&lol2;'));
    }));

  test('an external entity is refused', () =>
    refusedWith('malformed_presentation', async (r) =>
      encode(`<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>${decode(await idp.respond(r))}`),
    ));

  test('an oversized response is refused', () =>
    refusedWith('malformed_presentation', async (r) => {
      const xml = decode(await idp.respond(r));
      return encode(xml.replace('</samlp:Response>', `<!--${'x'.repeat(MAX_RESPONSE_BYTES)}--></samlp:Response>`));
    }));

  test("another session's response, posted from this browser", async () => {
    const mine = await started();
    const theirs = await started();
    const response = await idp.respond(theirs.request);
    await assertRefused(await mine.browser.postToAcs(world, response), 'nonce_mismatch', theirs.session.sessionId);
    await assertRefused(
      await theirs.browser.postToAcs(world, response, mine.session.sessionId),
      'nonce_mismatch',
      mine.session.sessionId,
    );
  });

  test('a response to a request that was never made', () =>
    refusedWith('nonce_mismatch', (r) => idp.respond(r, { inResponseTo: '_never-asked' })));
});
