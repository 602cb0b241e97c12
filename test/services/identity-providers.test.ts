import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { runCli } from '../../src/cli/main.ts';
import { generateSamlKeyPair } from '../../src/services/sso/saml/sp-keys.ts';
import { openSecret } from '../../src/services/sso/secret-box.ts';
import { findIdentityProvider } from '../../src/store/identity-providers.ts';
import { forEachDialect, startHarness, type Harness } from '../support/harness.ts';

const TOKEN = 'admin-token-0123456789abcdef0123';
const admin = { authorization: `Bearer ${TOKEN}` };
const SECRETS_KEY = '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef';

/** SAML metadata of one IdP, as a federation publishes it. */
async function idpMetadata(options: { entityId: string; scope?: string; doctype?: boolean }): Promise<string> {
  const { certificatePem } = await generateSamlKeyPair('Registry test IdP', new Date());
  const body = certificatePem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  const scope = options.scope === undefined ? '' : `<shibmd:Scope regexp="false">${options.scope}</shibmd:Scope>`;
  return `${options.doctype ? '<!DOCTYPE x [<!ENTITY e "e">]>' : ''}<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" xmlns:shibmd="urn:mace:shibboleth:metadata:1.0" xmlns:mdui="urn:oasis:names:tc:SAML:metadata:ui" xmlns:mdrpi="urn:oasis:names:tc:SAML:metadata:rpi" entityID="${options.entityId}">
<md:Extensions><mdrpi:RegistrationInfo registrationAuthority="https://www.surfconext.nl/"/></md:Extensions>
<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
<md:Extensions>${scope}<mdui:UIInfo><mdui:DisplayName xml:lang="nl">Universiteit Proef</mdui:DisplayName><mdui:DisplayName xml:lang="en">Test University of Proof</mdui:DisplayName></mdui:UIInfo></md:Extensions>
<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${body}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.proef.example/sso"/>
</md:IDPSSODescriptor></md:EntityDescriptor>`;
}

forEachDialect('identity provider registry', (dialect) => {
  let h: Harness;
  before(async () => {
    h = await startHarness(dialect, { ADMIN_TOKEN: TOKEN, IDP_SECRETS_KEY: SECRETS_KEY });
  });
  after(() => h.close());

  const post = (payload: Record<string, unknown>) =>
    h.app.inject({ method: 'POST', url: '/admin/v1/identity-providers', headers: admin, payload });

  test('SAML metadata: name from MDUI, domain from shibmd:Scope, country from the registration authority', async () => {
    const res = await post({
      samlMetadata: await idpMetadata({ entityId: 'https://idp.proef.example/a', scope: 'proef.example' }),
    });
    assert.equal(res.statusCode, 201, res.body);
    const idp = res.json().data;
    assert.match(idp.id, /^idp_/);
    assert.equal(idp.environment, 'live');
    assert.equal(idp.protocol, 'saml');
    assert.equal(idp.name, 'Test University of Proof');
    assert.equal(idp.domain, 'proef.example');
    assert.equal(idp.country, 'NL');
    assert.deepEqual(idp.scopes, ['proef.example']);
    assert.equal(idp.saml.ssoUrl, 'https://idp.proef.example/sso');
    assert.equal(idp.saml.certificates.length, 1);

    const again = await post({
      samlMetadata: await idpMetadata({ entityId: 'https://idp.proef.example/a', scope: 'proef.example' }),
    });
    assert.equal(again.statusCode, 409);
    const shown = await h.app.inject({ method: 'GET', url: `/admin/v1/identity-providers/${idp.id}`, headers: admin });
    assert.equal(shown.json().data.entityId, 'https://idp.proef.example/a');
    const listed = await h.app.inject({
      method: 'GET',
      url: '/admin/v1/identity-providers?environment=live',
      headers: admin,
    });
    assert.ok(listed.json().data.some((p: { id: string }) => p.id === idp.id));
    const removed = await h.app.inject({
      method: 'DELETE',
      url: `/admin/v1/identity-providers/${idp.id}`,
      headers: admin,
    });
    assert.equal(removed.statusCode, 200);
    assert.equal(
      (await h.app.inject({ method: 'GET', url: `/admin/v1/identity-providers/${idp.id}`, headers: admin })).statusCode,
      404,
    );
  });

  test('metadata with a DTD, or without a scope, is refused', async () => {
    const dtd = await post({
      samlMetadata: await idpMetadata({
        entityId: 'https://idp.proef.example/b',
        scope: 'proef.example',
        doctype: true,
      }),
    });
    assert.equal(dtd.statusCode, 400);
    assert.match(dtd.json().error.message, /document type declaration/);
    const scopeless = await post({ samlMetadata: await idpMetadata({ entityId: 'https://idp.proef.example/c' }) });
    assert.equal(scopeless.statusCode, 400);
    assert.match(scopeless.json().error.message, /shibmd:Scope/);
  });

  test('metadata by URL is fetched through the outbound guard', async () => {
    const xml = await idpMetadata({ entityId: 'https://idp.proef.example/d', scope: 'd.proef.example' });
    const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/xml' }).end(xml));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/metadata`;
      const res = await post({ samlMetadataUrl: url, environment: 'sandbox' });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.json().data.domain, 'd.proef.example');
      const refused = await post({ samlMetadataUrl: 'http://169.254.169.254/latest/meta-data' });
      assert.equal(refused.statusCode, 400);
    } finally {
      server.close();
    }
  });

  test('an OpenID Connect client secret is sealed at rest and never shown', async () => {
    const secret = 'oidc-client-secret-4f1b9c0e7d2a';
    const res = await post({
      oidcIssuer: 'https://login.proef.example',
      clientId: 'matricula',
      clientSecret: secret,
      domain: 'proef.example',
      country: 'NL',
    });
    assert.equal(res.statusCode, 201, res.body);
    assert.ok(!res.body.includes(secret));
    assert.equal(res.json().data.clientSecretSet, true);
    const rows = await sql`select * from identity_providers`.execute(h.store.db);
    assert.ok(!JSON.stringify(rows.rows).includes(secret), 'the secret is in the database');
    const stored = (await findIdentityProvider(h.store.db, res.json().data.id))!;
    const key = Buffer.from(SECRETS_KEY, 'hex');
    assert.equal(openSecret(key, stored.clientSecretSealed!, stored.id), secret);
    assert.equal(openSecret(key, stored.clientSecretSealed!, 'idp_another'), undefined, 'bound to its row');
  });

  test('matricula idps add|list|show|remove on the database', async () => {
    const out: string[] = [];
    const ctx = {
      env: {},
      stdout: (t: string) => out.push(t),
      stderr: (t: string) => out.push(t),
      clock: h.clock,
      config: () => h.config,
      openStore: async () => h.store,
    };
    const file = join(mkdtempSync(join(tmpdir(), 'idp-')), 'metadata.xml');
    writeFileSync(file, await idpMetadata({ entityId: 'https://idp.proef.example/cli', scope: 'cli.proef.example' }));
    assert.equal(
      await runCli(['idps', 'add', '--saml-metadata', file, '--environment', 'sandbox', '--json'], ctx),
      0,
      out.join('\n'),
    );
    const added = JSON.parse(out.pop()!);
    assert.equal(added.domain, 'cli.proef.example');
    assert.equal(await runCli(['idps', 'list', '--environment', 'sandbox'], ctx), 0);
    assert.ok(out.some((line) => line.includes(added.id)));
    assert.equal(await runCli(['idps', 'show', added.id], ctx), 0);
    assert.ok(out.some((line) => line.includes('scopes: cli.proef.example')));
    assert.equal(await runCli(['idps', 'remove', added.id], ctx), 0);
    assert.equal(await runCli(['idps', 'show', added.id], ctx), 2);
  });
});
