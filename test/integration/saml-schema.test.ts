import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { inflateRawSync } from 'node:zlib';
import type { IdentityProvider } from '../../src/domain/identity-providers.ts';
import { generateSamlKeyPair } from '../../src/services/sso/saml/sp-keys.ts';
import { samlFor } from '../../src/services/sso/saml/service-provider.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { samlSchemaErrors } from '../support/saml-schema.ts';

/**
 * Issue 26: the SP metadata (GET /saml/v1/metadata) and the built-in sandbox IdP's metadata
 * validate as SAML 2.0 metadata, and the AuthnRequest we send as a SAML 2.0 protocol message,
 * against the OASIS schemas (test/fixtures/saml-xsd/) with libxml2, offline. SQLite only: the
 * documents do not depend on the database.
 */
describe('SAML 2.0 schema validity', () => {
  const dialect = 'sqlite';
  let sandbox: Harness;
  let configured: Harness;
  let dir: string | undefined;
  const displayName = `Université d'Été & <Co> "Matricula"`;
  before(async () => {
    sandbox = await startHarness(dialect);
    const keys = await generateSamlKeyPair('Configured SP', new Date());
    dir = mkdtempSync(path.join(tmpdir(), 'saml-sp-'));
    writeFileSync(path.join(dir, 'sp.key'), keys.privateKeyPem);
    writeFileSync(path.join(dir, 'sp.crt'), keys.certificatePem);
    configured = await startHarness(dialect, {
      BASE_URL: 'https://verify.example.edu',
      SAML_SP_KEY_FILE: path.join(dir, 'sp.key'),
      SAML_SP_CERTIFICATE_FILE: path.join(dir, 'sp.crt'),
      SAML_SP_DISPLAY_NAME: displayName,
    });
  });
  after(async () => {
    await sandbox?.close();
    await configured?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const metadataOf = async (h: Harness) => {
    const res = await h.app.inject({ method: 'GET', url: '/saml/v1/metadata' });
    assert.equal(res.statusCode, 200);
    return res.body;
  };

  test('the metadata of a default sandbox service validates', async () => {
    const xml = await metadataOf(sandbox);
    assert.deepEqual(await samlSchemaErrors(xml, 'metadata'), []);
    assert.match(xml, /<mdui:DisplayName xml:lang="en">Matricula<\/mdui:DisplayName>/);
  });

  test('the metadata with configured keys and display name validates', async () => {
    const xml = await metadataOf(configured);
    assert.deepEqual(await samlSchemaErrors(xml, 'metadata'), []);
    assert.match(xml, /entityID="https:\/\/verify\.example\.edu\/saml\/v1\/metadata"/);
    assert.match(xml, /Université d'Été &amp; &lt;Co&gt; "Matricula"/);
  });

  test('broken metadata fails: the validator checks order, MDUI content and required attributes', async () => {
    const xml = await metadataOf(sandbox);
    // Extensions moved after the KeyDescriptors: out of the schema's sequence.
    const extensions = /<md:Extensions[\s>].*?<\/md:Extensions>/s.exec(xml)![0];
    const reordered = xml.replace(extensions, '').replace(/(<\/(?:md:)?SPSSODescriptor>)/, `${extensions}$1`);
    assert.notEqual(reordered, xml);
    const misplaced = await samlSchemaErrors(reordered, 'metadata');
    assert.ok(
      misplaced.some((e) => /Extensions.*not expected/.test(e)),
      misplaced.join('\n'),
    );
    // An MDUI DisplayName without its xml:lang (required by the MDUI schema).
    const noLang = await samlSchemaErrors(
      xml.replace('<mdui:DisplayName xml:lang="en">', '<mdui:DisplayName>'),
      'metadata',
    );
    assert.ok(
      noLang.some((e) => /DisplayName.*lang/.test(e)),
      noLang.join('\n'),
    );
    // An AssertionConsumerService without its index.
    const withoutIndex = xml.replace(/(<(?:md:)?AssertionConsumerService[^>]*?) index="\d+"/, '$1');
    assert.notEqual(withoutIndex, xml);
    const noIndex = await samlSchemaErrors(withoutIndex, 'metadata');
    assert.ok(
      noIndex.some((e) => /index/.test(e)),
      noIndex.join('\n'),
    );
  });

  test('the built-in sandbox IdP metadata validates, shibmd:Scope included', async () => {
    const res = await sandbox.app.inject({ method: 'GET', url: '/sandbox/idp/v1/metadata' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(await samlSchemaErrors(res.body, 'metadata'), []);
    // The shibmd schema is loaded: a Scope whose regexp is not a boolean is refused.
    const broken = res.body.replace('<shibmd:Scope regexp="false">', '<shibmd:Scope regexp="maybe">');
    assert.notEqual(broken, res.body);
    const errors = await samlSchemaErrors(broken, 'metadata');
    assert.ok(
      errors.some((e) => /regexp/.test(e)),
      errors.join('\n'),
    );
  });

  test('the AuthnRequest we send validates against the protocol schema', async () => {
    const keys = await sandbox.services.samlKeys();
    const idp = { saml: { ssoUrl: 'https://idp.example.org/sso', certificates: [] } } as unknown as IdentityProvider;
    const saml = samlFor({ baseUrl: sandbox.config.baseUrl, keys, idp, clock: sandbox.clock, requestId: '_req1' });
    const location = new URL(await saml.getAuthorizeUrlAsync('relay', undefined, {}));
    const request = inflateRawSync(Buffer.from(location.searchParams.get('SAMLRequest')!, 'base64')).toString('utf8');
    assert.match(request, /<samlp:AuthnRequest/);
    assert.deepEqual(await samlSchemaErrors(request, 'protocol'), []);
    // The Issuer moved after the NameIDPolicy: out of the schema's sequence.
    const issuer = /<saml:Issuer[^>]*>[^<]*<\/saml:Issuer>/.exec(request)![0];
    const reordered = request.replace(issuer, '').replace('</samlp:AuthnRequest>', `${issuer}</samlp:AuthnRequest>`);
    assert.notEqual(reordered, request);
    const errors = await samlSchemaErrors(reordered, 'protocol');
    assert.ok(
      errors.some((e) => /Issuer.*not expected/.test(e)),
      errors.join('\n'),
    );
  });
});
