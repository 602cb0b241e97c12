/**
 * Federation metadata (issue 26): a synthetic signed aggregate of --idps identity providers (about
 * eduGAIN's size at 5,000) loaded by a running service, and what that costs:
 * - verify: parse and verify the aggregate's XML signature in this process (saml/aggregate.ts),
 *   --verify-runs times, median;
 * - load: `POST /admin/v1/identity-federations` with the aggregate's URL (fetched by the service
 *   through its outbound guard, verified, every IdP written), wall time, and the service's peak
 *   RSS above its idle RSS (after a collection) while it loads;
 * - refresh: the aggregate republished with 5% of names changed, 5% removed and 5% added, refreshed
 *   (`POST …/refresh`) while --concurrency clients read a session and search the portal's IdP list
 *   (`GET /sso/v1/sessions/{id}/identity-providers?q=…`): p50/p99 of those requests idle and during
 *   the refresh.
 *
 * - floor: xml-crypto's `checkSignature` alone on the same aggregate, in a child process
 *   (xmlcrypto-floor.ts), its peak RSS above its own base: what any reading of the aggregate with
 *   xml-crypto costs at least; printed beside the service's extra RSS, with their ratio.
 *
 *   node --import tsx bench/federation.ts [--idps 5000] [--database sqlite|postgres] [--verify-runs 3]
 *                                         [--requests 2000] [--concurrency 8] [--compiled] [--json]
 *                                         [--memory-only]
 *
 * --memory-only: the floor and the load's extra RSS only; nothing is timed (no verify runs, no
 * request load, no refresh), for a machine where others measure time.
 *
 * --compiled runs the service from dist/ (`npm run build` first), as in production: under tsx the
 * verification thread spends about a second registering tsx before it starts.
 *
 * Goals (issue 26): load+verify ≤ 10 s, ≤ 150 MB extra RSS, requests not blocked by a refresh.
 * Figures are printed, never asserted; with --json the last line is one JSON object (ms, MB;
 * `xmlcrypto_floor_mb` and `rss_vs_floor`, the service's extra RSS over that floor).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { verifyAggregate } from '../src/services/sso/saml/aggregate.ts';
import { generateSamlKeyPair } from '../src/services/sso/saml/sp-keys.ts';
import { federationKey, idpEntity, signedAggregate, syntheticEntities } from '../test/support/federation.ts';
import {
  benchDatabase,
  load,
  median,
  REPO_ROOT,
  startService,
  tenantWithSession,
  type BenchDialect,
  type LoadResult,
} from './support.ts';

const { values } = parseArgs({
  options: {
    idps: { type: 'string' },
    database: { type: 'string' },
    'verify-runs': { type: 'string' },
    requests: { type: 'string' },
    concurrency: { type: 'string' },
    compiled: { type: 'boolean' },
    json: { type: 'boolean' },
    'memory-only': { type: 'boolean' },
  },
});
const MEMORY_ONLY = values['memory-only'] ?? false;
const IDPS = Number(values.idps ?? 5000);
const DIALECT = (values.database ?? 'sqlite') as BenchDialect;
const VERIFY_RUNS = Number(values['verify-runs'] ?? 3);
const REQUESTS = Number(values.requests ?? 2000);
const CONCURRENCY = Number(values.concurrency ?? 8);
const TOKEN = 'bench-admin-token-0123456789abcdef';
const log = (line: string) => {
  if (!values.json) console.log(line);
};

// The aggregate, and its republication for the refresh.
const key = await federationKey('rsa');
const idpCert = (await generateSamlKeyPair('bench IdP', new Date())).certificatePem;
const validUntil = new Date(Date.now() + 7 * 86_400_000);
const entities = syntheticEntities(IDPS, idpCert);
const first = signedAggregate(entities, key, { validUntil, cacheDuration: 'PT6H' });
const share = Math.max(1, Math.floor(IDPS * 0.05));
const second = signedAggregate(
  [
    ...entities
      .slice(share)
      .map((e, i) => (i < share ? e.replace(/University number (\d+)/, 'Renamed University $1') : e)),
    ...Array.from({ length: share }, (_, i) =>
      idpEntity({
        entityId: `https://new${i}.example.org/idp`,
        scope: `new${i}.example.org`,
        displayName: `New University ${i}`,
        ssoUrl: `https://new${i}.example.org/sso`,
        certificatePem: idpCert,
        registrationAuthority: 'https://www.surfconext.nl/',
      }),
    ),
  ],
  key,
  { validUntil, cacheDuration: 'PT6H' },
);
log(`aggregate: ${IDPS} IdPs, ${(Buffer.byteLength(first) / 1e6).toFixed(1)} MB`);

/** xml-crypto's checkSignature alone on `xml`, in a child process: its peak RSS above its base, MB. */
function xmlCryptoFloorMb(xml: string, certificatePem: string): number {
  const dir = mkdtempSync(join(tmpdir(), 'federation-floor-'));
  try {
    writeFileSync(join(dir, 'aggregate.xml'), xml);
    writeFileSync(join(dir, 'signer.pem'), certificatePem);
    const child = spawnSync(
      process.execPath,
      [
        '--expose-gc',
        '--import',
        'tsx',
        'bench/xmlcrypto-floor.ts',
        join(dir, 'aggregate.xml'),
        join(dir, 'signer.pem'),
      ],
      { cwd: REPO_ROOT, encoding: 'utf8' },
    );
    if (child.status !== 0) throw new Error(`xmlcrypto-floor.ts failed: ${child.stderr.slice(0, 500)}`);
    const floor = JSON.parse(child.stdout.trim().split('\n').pop()!) as { ok: boolean; peakMb: number };
    if (!floor.ok) throw new Error('xmlcrypto-floor.ts: the signature did not verify');
    return floor.peakMb;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// The floor, before anything else runs.
const floorMb = xmlCryptoFloorMb(first, key.certificatePem);
log(`xml-crypto checkSignature alone (child process): peak ${floorMb.toFixed(0)} MB above its base RSS`);

// Verification alone, in this process.
const verifyMs: number[] = [];
for (let i = 0; i < (MEMORY_ONLY ? 0 : VERIFY_RUNS); i++) {
  const t0 = performance.now();
  const verified = verifyAggregate(first, {
    signingCertificate: key.certificatePem,
    now: new Date(),
    maxBytes: 512 * 1024 * 1024,
  });
  verifyMs.push(performance.now() - t0);
  if (!verified.ok || verified.providers.length !== IDPS)
    throw new Error(`verify: ${JSON.stringify(verified).slice(0, 300)}`);
}
if (!MEMORY_ONLY) log(`verify (parse + signature + read), median of ${VERIFY_RUNS}: ${median(verifyMs).toFixed(0)} ms`);

// The federation's publication point, and the service.
let published = first;
const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' }).end(published);
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const metadataUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/metadata.xml`;
const database = await benchDatabase(DIALECT);
const service = await startService({
  root: REPO_ROOT,
  databaseUrl: database.url,
  name: 'federation',
  inspect: true,
  compiled: values.compiled ?? false,
  env: {
    ADMIN_TOKEN: TOKEN,
    OUTBOUND_ALLOW_PRIVATE_TARGETS: 'true',
    FEDERATION_FETCH_TIMEOUT_MS: '600000',
    // One session searched thousands of times: its per-session limit (60/min) would answer 429s,
    // and the percentiles would time refusals.
    RATE_LIMIT_SESSION_PER_MINUTE: '0',
    RATE_LIMIT_PUBLIC_PER_MINUTE: '0',
    RATE_LIMIT_API_KEY_PER_MINUTE: '0',
  },
});
const admin = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
try {
  const tenant = await tenantWithSession(service, database.url);
  const requests = (i: number) =>
    i % 2 === 0
      ? { method: 'GET' as const, path: `/verification/v1/sessions/${tenant.sessionId}` }
      : {
          method: 'GET' as const,
          path: `/sso/v1/sessions/${tenant.sessionId}/identity-providers?q=${['university 4', 'uni12', 'nl number', 'renamed'][i % 4]}`,
        };
  const idle: LoadResult | undefined = MEMORY_ONLY
    ? undefined
    : await load('idle', service, REQUESTS, CONCURRENCY, requests, tenant.headers);

  await service.collectGarbage!();
  const rssIdle = service.rssMb();
  let rssPeak = rssIdle;
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, service.rssMb());
  }, 25);
  const t0 = performance.now();
  const loaded = await fetch(`${service.origin}/admin/v1/identity-federations`, {
    method: 'POST',
    headers: admin,
    body: JSON.stringify({ environment: 'sandbox', metadataUrl, signingCertificate: key.certificatePem }),
  });
  const loadMs = performance.now() - t0;
  clearInterval(sampler);
  const loadedBody = (await loaded.json()) as {
    data?: { federation: { id: string }; counts: Record<string, number> };
  };
  if (loaded.status !== 201) throw new Error(`load answered ${loaded.status}: ${JSON.stringify(loadedBody)}`);
  const federationId = loadedBody.data!.federation.id;
  if (!MEMORY_ONLY) log(`load by URL (fetch, verify, write ${loadedBody.data!.counts.added}): ${loadMs.toFixed(0)} ms`);
  const rssExtra = rssPeak - rssIdle;
  log(
    `service RSS: idle ${rssIdle.toFixed(0)} MB, peak while loading ${rssPeak.toFixed(0)} MB (+${rssExtra.toFixed(0)} MB)`,
  );
  log(
    `extra RSS vs the floor (xml-crypto checkSignature alone, +${floorMb.toFixed(0)} MB): ${(rssExtra / floorMb).toFixed(2)}x`,
  );
  const memory = {
    idps: IDPS,
    database: DIALECT,
    aggregateMb: Buffer.byteLength(first) / 1e6,
    rssIdleMb: rssIdle,
    rssPeakMb: rssPeak,
    rssExtraMb: rssExtra,
    xmlcrypto_floor_mb: floorMb,
    rss_vs_floor: rssExtra / floorMb,
  };
  if (loadedBody.data!.counts.added !== IDPS)
    throw new Error(`load added ${loadedBody.data!.counts.added} IdPs, not ${IDPS}`);
  if (MEMORY_ONLY) {
    if (values.json) console.log(JSON.stringify(memory));
  } else {
    // Searching over the loaded registry, idle, then the same load while a refresh runs.
    const searchIdle = await load('after load', service, REQUESTS, CONCURRENCY, requests, tenant.headers);
    published = second;
    const refreshStarted = performance.now();
    const refreshing = fetch(`${service.origin}/admin/v1/identity-federations/${federationId}/refresh`, {
      method: 'POST',
      headers: admin,
      body: '{}',
    }).then(async (res) => ({ status: res.status, body: await res.text(), ms: performance.now() - refreshStarted }));
    const during = await load('during refresh', service, REQUESTS, CONCURRENCY, requests, tenant.headers);
    if (!idle) throw new Error('unreachable: idle is loaded unless --memory-only');
    const refreshed = await refreshing;
    if (refreshed.status !== 200)
      throw new Error(`refresh answered ${refreshed.status}: ${refreshed.body.slice(0, 300)}`);
    const counts = (JSON.parse(refreshed.body) as { data: { counts: Record<string, number> } }).data.counts;
    log(`refresh: ${refreshed.ms.toFixed(0)} ms (${JSON.stringify(counts)})`);
    if (refreshed.ms > (during.p99 * REQUESTS) / CONCURRENCY)
      log('note: the refresh outlasted the load; raise --requests to cover it whole');
    for (const r of [idle, searchIdle, during])
      log(
        `API (session read + IdP search) ${r.label.padEnd(15)} p50 ${r.p50.toFixed(1)} ms  p99 ${r.p99.toFixed(1)} ms  errors ${r.errors}`,
      );
    // A refused request is fast: percentiles over refusals would flatter the service.
    const refused = [idle, searchIdle, during].filter((r) => r.errors > 0).map((r) => `${r.label}: ${r.errors}`);
    if (refused.length > 0)
      throw new Error(`requests answered errors (${refused.join(', ')}): the figures mean nothing`);

    if (values.json)
      console.log(
        JSON.stringify({
          ...memory,
          verifyMedianMs: median(verifyMs),
          loadMs,
          refreshMs: refreshed.ms,
          refreshCounts: counts,
          api: Object.fromEntries(
            [idle, searchIdle, during].map((r) => [r.label, { p50: r.p50, p99: r.p99, errors: r.errors, rps: r.rps }]),
          ),
        }),
      );
  }
} finally {
  await service.stop();
  server.close();
  await database.drop();
}
