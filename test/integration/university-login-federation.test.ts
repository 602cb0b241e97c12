import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { runCli } from '../../src/cli/main.ts';
import { buildPeriodicJobs } from '../../src/jobs/schedule.ts';
import { addFederation, refreshDueFederations } from '../../src/services/sso/federation.ts';
import { parseIdpMetadata } from '../../src/services/sso/saml/idp-metadata.ts';
import { generateSamlKeyPair } from '../../src/services/sso/saml/sp-keys.ts';
import { federationEntries } from '../../src/store/identity-providers.ts';
import {
  federationKey,
  idpEntity,
  signedAggregate,
  spEntity,
  syntheticEntities,
  type FederationKey,
} from '../support/federation.ts';
import { forEachDialect } from '../support/harness.ts';
import { startTestIdp, type TestIdp } from '../support/saml-idp.ts';
import { getSession } from '../support/sessions.ts';
import { sandboxSession, startLoginWorld, TestBrowser, type LoginWorld } from '../support/university-login.ts';

const TOKEN = 'admin-token-0123456789abcdef0123';
const admin = { authorization: `Bearer ${TOKEN}` };
const DAY = 86_400_000;

/** Serves whatever `body` is now at /metadata.xml on 127.0.0.1 (the federation's publication point). */
async function metadataServer(): Promise<{ url: string; body: string; hits: number; close(): Promise<void> }> {
  const state = { url: '', body: '', hits: 0, close: async () => undefined as void };
  const server: Server = createServer((req, res) => {
    state.hits++;
    if (req.url !== '/metadata.xml' || state.body === '') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' }).end(state.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as { port: number }).port}/metadata.xml`;
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return state;
}

forEachDialect('university login: federation metadata aggregates', (dialect) => {
  let world: LoginWorld;
  let key: FederationKey;
  let otherKey: FederationKey;
  let idpCert: string;
  let idp: TestIdp;
  let served: Awaited<ReturnType<typeof metadataServer>>;
  const now = () => world.h.clock.now();

  before(async () => {
    world = await startLoginWorld(dialect, { ADMIN_TOKEN: TOKEN });
    key = await federationKey('rsa');
    otherKey = await federationKey('rsa');
    idpCert = (await generateSamlKeyPair('federated IdP', new Date())).certificatePem;
    idp = await startTestIdp(world.spMetadata, { scope: 'fed-uni.test' });
    served = await metadataServer();
  });
  after(async () => {
    await served?.close();
    await idp?.close();
    await world?.close();
  });

  const post = (url: string, payload: Record<string, unknown>) =>
    world.h.app.inject({ method: 'POST', url, headers: admin, payload });
  const aggregate = (entities: string[], options: { validUntil?: Date; cacheDuration?: string } = {}) =>
    signedAggregate(entities, key, {
      validUntil: options.validUntil ?? new Date(now().getTime() + 7 * DAY),
      ...options,
    });
  const three = () => [
    idpEntity({
      entityId: 'https://idp.alpha.example/idp',
      scope: 'alpha.example',
      displayName: 'Alpha University',
      ssoUrl: 'https://idp.alpha.example/sso',
      certificatePem: idpCert,
      registrationAuthority: 'http://www.swamid.se/',
    }),
    idpEntity({
      entityId: 'https://idp.beta.example/idp',
      scope: 'beta.example',
      displayName: 'Beta College',
      ssoUrl: 'https://idp.beta.example/sso',
      certificatePem: idpCert,
      country: 'FR',
    }),
    idpEntity({
      entityId: 'https://idp.gamma.example/idp',
      scope: 'gamma.example',
      displayName: 'Gamma Institute',
      ssoUrl: 'https://idp.gamma.example/sso',
      certificatePem: idpCert,
    }),
    spEntity('https://sp.example/shibboleth'),
  ];

  test('an aggregate loads: each IdP a registry entry, its university from the metadata', async () => {
    const res = await post('/admin/v1/identity-federations', {
      environment: 'sandbox',
      metadata: aggregate(three(), { cacheDuration: 'PT1H' }),
      signingCertificate: key.certificatePem,
      country: 'DE',
    });
    assert.equal(res.statusCode, 201, res.body);
    const { federation, counts } = res.json().data;
    assert.match(federation.id, /^fed_/);
    assert.equal(federation.name, 'urn:mace:test:federation');
    assert.equal(federation.entityCount, 3);
    assert.equal(federation.cacheDurationSeconds, 3600);
    assert.equal(federation.metadataUrl, null);
    assert.equal(federation.nextRefreshAt, null, 'a file has no scheduled refresh');
    assert.deepEqual(counts, { added: 3, updated: 0, removed: 0, unchanged: 0, skipped: 0 });
    const entries = await federationEntries(world.h.store.db, federation.id);
    const byDomain = Object.fromEntries(entries.map((e) => [e.domain, e]));
    assert.deepEqual(Object.keys(byDomain).sort(), ['alpha.example', 'beta.example', 'gamma.example']);
    assert.deepEqual(
      [byDomain['alpha.example']!.name, byDomain['alpha.example']!.country],
      ['Alpha University', 'SE'],
      'country from the registration authority',
    );
    assert.equal(byDomain['beta.example']!.country, 'FR', 'country from the entity attributes');
    assert.equal(byDomain['gamma.example']!.country, 'DE', "the federation's default country");
    assert.equal(byDomain['gamma.example']!.environment, 'sandbox');
    assert.equal(byDomain['gamma.example']!.saml!.ssoUrl, 'https://idp.gamma.example/sso');

    const removed = await world.h.app.inject({
      method: 'DELETE',
      url: `/admin/v1/identity-federations/${federation.id}`,
      headers: admin,
    });
    assert.equal(removed.statusCode, 200, removed.body);
    assert.equal(removed.json().data.removed, 3);
    assert.deepEqual(await federationEntries(world.h.store.db, federation.id), []);
  });

  const refusedWith = async (metadata: string, pattern: RegExp, certificate = key.certificatePem) => {
    const res = await post('/admin/v1/identity-federations', { metadata, signingCertificate: certificate });
    assert.equal(res.statusCode, 400, res.body);
    assert.match(res.json().error.message, pattern);
  };

  test('refused: a tampered aggregate, a wrong signing certificate, an expired one, SHA-1, a DTD, none', async () => {
    const good = aggregate(three());
    await refusedWith(good.replace('Beta College', 'Beta Kollege'), /signature does not verify/);
    await refusedWith(good.replace('beta.example</shibmd', 'evil.example</shibmd'), /signature does not verify/);
    await refusedWith(good, /signature does not verify/, otherKey.certificatePem);
    await refusedWith(aggregate(three(), { validUntil: new Date(now().getTime() - 1000) }), /expired/);
    await refusedWith(
      signedAggregate(three(), key, { validUntil: new Date(now().getTime() + DAY), sha1: true }),
      /signature does not verify/,
    );
    await refusedWith(`<!DOCTYPE x [<!ENTITY e "e">]>${good}`, /DTD/);
    await refusedWith(good.replace(/<ds:Signature[\s\S]*<\/ds:Signature>/, ''), /not signed/);
    await refusedWith(good, /not a PEM/, 'not a certificate');
    const noEnd = aggregate(three()).replace(/ validUntil="[^"]+"/, '');
    await refusedWith(noEnd, /signature does not verify|validUntil/);
    assert.deepEqual(
      (await world.h.app.inject({ method: 'GET', url: '/admin/v1/identity-federations', headers: admin })).json().data,
      [],
      'nothing was loaded',
    );
  });

  test('size limit: an aggregate larger than FEDERATION_METADATA_MAX_BYTES, given or fetched, is refused', async () => {
    const small = {
      ...world.h.services,
      config: {
        ...world.h.config,
        universityLogin: { ...world.h.config.universityLogin, federationMaxBytes: 2048 },
      },
    };
    const big = aggregate(three());
    const given = await addFederation(small, { metadata: big, signingCertificate: key.certificatePem });
    assert.ok(!given.ok && /larger than 2048 bytes/.test(given.problems.join()), JSON.stringify(given));
    served.body = big;
    const fetched = await addFederation(small, { metadataUrl: served.url, signingCertificate: key.certificatePem });
    assert.ok(!fetched.ok && /more than 2048 bytes/.test(fetched.problems.join()), JSON.stringify(fetched));
  });

  test('an entity past its own validUntil is skipped', async () => {
    const [alpha, beta] = three();
    const expired = beta!.replace(
      '<md:EntityDescriptor ',
      `<md:EntityDescriptor validUntil="${new Date(now().getTime() - 1000).toISOString()}" `,
    );
    const loaded = await addFederation(world.h.services, {
      environment: 'sandbox',
      metadata: aggregate([alpha!, expired]),
      signingCertificate: key.certificatePem,
    });
    assert.ok(loaded.ok, JSON.stringify(loaded));
    assert.deepEqual(
      (await federationEntries(world.h.store.db, loaded.federation.id)).map((e) => e.domain),
      ['alpha.example'],
    );
    assert.match(loaded.skipped.join(), /idp\.beta\.example.*expired/);
    await world.h.app.inject({
      method: 'DELETE',
      url: `/admin/v1/identity-federations/${loaded.federation.id}`,
      headers: admin,
    });
  });

  test('signature wrapping: an entity put beside the signed element is never registered', async () => {
    const good = aggregate(three());
    const evil = idpEntity({
      entityId: 'https://idp.evil.example/idp',
      scope: 'evil.example',
      displayName: 'Evil University',
      ssoUrl: 'https://idp.evil.example/sso',
      certificatePem: idpCert,
      registrationAuthority: 'http://www.swamid.se/',
    });
    const namespaces = /^<md:EntitiesDescriptor ([^>]*?) ID=/.exec(good)![1]!;
    const wrapped = `<md:EntitiesDescriptor ${namespaces} validUntil="${new Date(now().getTime() + DAY).toISOString()}">${evil}${good}</md:EntitiesDescriptor>`;
    const res = await post('/admin/v1/identity-federations', {
      metadata: wrapped,
      signingCertificate: key.certificatePem,
    });
    if (res.statusCode === 201) {
      const entries = await federationEntries(world.h.store.db, res.json().data.federation.id);
      assert.ok(!entries.some((e) => e.domain === 'evil.example'), 'the unsigned entity was registered');
      assert.equal(entries.length, 2, 'gamma tells no country and there is no default');
      await world.h.app.inject({
        method: 'DELETE',
        url: `/admin/v1/identity-federations/${res.json().data.federation.id}`,
        headers: admin,
      });
    } else assert.equal(res.statusCode, 400, res.body);
    // Inside the signed element: the digest no longer matches.
    await refusedWith(good.replace('</md:EntitiesDescriptor>', `${evil}</md:EntitiesDescriptor>`), /does not verify/);
  });

  test('an ECDSA-signed aggregate (P-256, SHA-256) verifies', async () => {
    const ecKey = await federationKey('ecdsa');
    const outcome = await addFederation(world.h.services, {
      environment: 'live',
      metadata: signedAggregate(syntheticEntities(2, idpCert, 'https://ec'), ecKey, {
        validUntil: new Date(now().getTime() + DAY),
      }),
      signingCertificate: ecKey.certificatePem,
    });
    assert.ok(outcome.ok, JSON.stringify(outcome));
    assert.equal(outcome.counts.added, 2);
  });

  test('refresh by URL: on schedule through the guard, entries added, updated, removed, ids kept', async () => {
    served.body = aggregate(three(), { cacheDuration: 'PT1H' });
    const loaded = await addFederation(world.h.services, {
      environment: 'sandbox',
      metadataUrl: served.url,
      signingCertificate: key.certificatePem,
      country: 'DE',
    });
    assert.ok(loaded.ok, JSON.stringify(loaded));
    const id = loaded.federation.id;
    assert.equal(Date.parse(loaded.federation.nextRefreshAt!), now().getTime() + 3600_000, 'per cacheDuration');
    const before = new Map((await federationEntries(world.h.store.db, id)).map((e) => [e.entityId, e.id]));

    // Not due yet: the job fetches nothing.
    const hits = served.hits;
    assert.deepEqual(await refreshDueFederations(world.h.services), { refreshed: 0, failed: 0 });
    assert.equal(served.hits, hits);

    // The federation drops gamma, renames alpha, adds delta.
    const [alpha, beta] = three();
    served.body = aggregate(
      [
        alpha!.replace('Alpha University', 'Alpha University of Science'),
        beta!,
        idpEntity({
          entityId: 'https://idp.delta.example/idp',
          scope: 'delta.example',
          displayName: 'Delta School',
          ssoUrl: 'https://idp.delta.example/sso',
          certificatePem: idpCert,
        }),
      ],
      { cacheDuration: 'PT2H' },
    );
    world.h.clock.advance(3600_000);
    const jobs = buildPeriodicJobs({
      services: world.h.services,
      clock: world.h.clock,
      config: world.h.config,
      log: { error: (fields) => assert.fail(String(fields.err)) },
    });
    const job = jobs.find((j) => j.name === 'federation-refresh')!;
    assert.deepEqual(await job.runOnce(), { refreshed: 1, failed: 0 });
    const after = await federationEntries(world.h.store.db, id);
    const byEntity = Object.fromEntries(after.map((e) => [e.entityId, e]));
    assert.deepEqual(Object.keys(byEntity).sort(), [
      'https://idp.alpha.example/idp',
      'https://idp.beta.example/idp',
      'https://idp.delta.example/idp',
    ]);
    assert.equal(byEntity['https://idp.alpha.example/idp']!.name, 'Alpha University of Science');
    assert.equal(byEntity['https://idp.alpha.example/idp']!.id, before.get('https://idp.alpha.example/idp'));
    assert.equal(byEntity['https://idp.beta.example/idp']!.id, before.get('https://idp.beta.example/idp'));

    // A tampered publication changes nothing; past validUntil with no good copy, the entries go.
    served.body = served.body.replace('Delta School', 'Delta Scam');
    world.h.clock.advance(2 * 3600_000);
    assert.deepEqual(await refreshDueFederations(world.h.services), { refreshed: 0, failed: 1 });
    assert.equal((await federationEntries(world.h.store.db, id)).length, 3);
    const shown = await world.h.app.inject({
      method: 'GET',
      url: `/admin/v1/identity-federations/${id}`,
      headers: admin,
    });
    assert.match(shown.json().data.lastError, /signature/);
    world.h.clock.advance(8 * DAY);
    await refreshDueFederations(world.h.services);
    assert.deepEqual(await federationEntries(world.h.store.db, id), [], 'expired metadata vouches for nothing');

    // A good publication again: they come back.
    served.body = aggregate(three());
    const refreshed = await post(`/admin/v1/identity-federations/${id}/refresh`, {});
    assert.equal(refreshed.statusCode, 200, refreshed.body);
    assert.equal(refreshed.json().data.counts.added, 3);
    await world.h.app.inject({ method: 'DELETE', url: `/admin/v1/identity-federations/${id}`, headers: admin });
  });

  test('a student logs in through an IdP loaded from the aggregate (samlify IdP)', async () => {
    world.h.clock.set(new Date());
    const meta = parseIdpMetadata(idp.metadataXml);
    assert.ok(meta.ok);
    const entity = idpEntity({
      entityId: idp.entityId,
      scope: 'fed-uni.test',
      displayName: 'Federated University',
      ssoUrl: meta.providers[0]!.ssoUrl,
      certificatePem: meta.providers[0]!.certificates[0]!,
      registrationAuthority: 'https://www.surfconext.nl/',
    });
    const loaded = await addFederation(world.h.services, {
      environment: 'sandbox',
      metadata: aggregate([entity, ...syntheticEntities(3, idpCert, 'https://other')]),
      signingCertificate: key.certificatePem,
    });
    assert.ok(loaded.ok, JSON.stringify(loaded));
    const session = await sandboxSession(world);
    const browser = new TestBrowser();
    const started = await browser.start(world, session, idp.entityId);
    assert.equal(started.status, 302, await started.text());
    const posted = await browser.loginAt(started.headers.get('location')!, 'student');
    const answer = await browser.postToAcs(world, posted.SAMLResponse, posted.RelayState);
    assert.equal(answer.status, 303, await answer.text());
    const read = (await getSession(world.h, world.tenant, session.sessionId)).json().data;
    assert.equal(read.result.verified, true);
    assert.deepEqual(read.result.university, { name: 'Federated University', domain: 'fed-uni.test', country: 'NL' });

    // Removing the federation stops logins through its IdPs.
    const removed = await world.h.app.inject({
      method: 'DELETE',
      url: `/admin/v1/identity-federations/${loaded.federation.id}`,
      headers: admin,
    });
    assert.equal(removed.json().data.removed, 4);
    assert.equal((await new TestBrowser().start(world, await sandboxSession(world), idp.entityId)).status, 404);
  });

  test('matricula idps add --federation-metadata FILE, list, show, refresh, remove', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'federation-'));
    const file = join(dir, 'aggregate.xml');
    const pem = join(dir, 'signer.pem');
    writeFileSync(file, aggregate(three()));
    writeFileSync(pem, key.certificatePem);
    const out: string[] = [];
    const ctx = {
      env: {},
      stdout: (t: string) => out.push(t),
      stderr: (t: string) => out.push(t),
      clock: world.h.clock,
      config: () => world.h.config,
      openStore: async () => world.h.store,
    };
    const args = ['idps', 'add', '--federation-metadata', file, '--signing-certificate', pem];
    assert.equal(await runCli([...args, '--country', 'DE', '--json'], ctx), 0, out.join('\n'));
    const { federation } = JSON.parse(out.pop()!);
    assert.equal(federation.entityCount, 3);
    assert.equal(await runCli(['idps', 'list', '--environment', 'live'], ctx), 0);
    assert.ok(out.some((l) => l.includes(federation.id) && l.includes('3 IdPs')));
    assert.ok(out.some((l) => l.includes('Gamma Institute')));
    assert.equal(await runCli(['idps', 'show', federation.id], ctx), 0);
    assert.ok(out.some((l) => l.includes('signing certificate SHA-256')));
    writeFileSync(file, aggregate(three().slice(1)));
    assert.equal(await runCli(['idps', 'refresh', federation.id, '--federation-metadata', file], ctx), 0);
    assert.match(out.pop()!, /0 added, 0 updated, 1 removed, 2 unchanged/);
    writeFileSync(file, aggregate(three()).replace('Gamma', 'Gamme'));
    assert.equal(await runCli(['idps', 'refresh', federation.id, '--federation-metadata', file], ctx), 2);
    assert.match(out.pop()!, /signature does not verify/);
    assert.equal(await runCli(['idps', 'remove', federation.id], ctx), 0);
    assert.match(out.pop()!, /and its 2 IdPs/);
    assert.equal(await runCli(['idps', 'show', federation.id], ctx), 2);
  });
});
