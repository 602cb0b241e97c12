import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildDeliveryHeaders, sendWebhook } from '../../src/webhooks/sender.ts';
import { classifyAddress } from '../../src/outbound/address-ranges.ts';
import {
  checkTargetUrl,
  checkTargetUrlShape,
  createGuardedDispatcher,
  type HostResolver,
  type ResolvedAddress,
} from '../../src/outbound/ssrf.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const PUBLIC_V4 = '93.184.215.14';

/** A resolver that knows only the names it is given: no test depends on real DNS. */
function resolverOf(table: Record<string, string[]>): HostResolver & { calls: string[] } {
  const calls: string[] = [];
  const resolver = async (hostname: string): Promise<ResolvedAddress[]> => {
    calls.push(hostname);
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }) as ResolvedAddress);
  };
  return Object.assign(resolver, { calls });
}

const closedPolicy = { allowPrivateTargets: false, lookup: resolverOf({}) };

describe('classifyAddress', () => {
  const table: Array<[string, string]> = [
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['2002:7f00:1::1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['64:ff9b::a00:1', 'private'],
    ['100.64.0.1', 'shared'],
    ['100.127.255.255', 'shared'],
    ['169.254.1.1', 'link_local'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['fc00::1', 'unique_local'],
    ['fd12:3456::1', 'unique_local'],
    ['169.254.169.254', 'metadata'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['::127.0.0.1', 'reserved'],
    ['100::1', 'reserved'],
    ['8.8.8.8', 'public'],
    ['172.32.0.1', 'public'],
    ['100.128.0.1', 'public'],
    ['::ffff:8.8.8.8', 'public'],
    ['2606:4700:4700::1111', 'public'],
    ['64:ff9b::808:808', 'public'],
  ];
  for (const [address, category] of table) {
    it(`${address} is ${category}`, () => assert.equal(classifyAddress(address)?.category, category));
  }

  it('returns null for what is not an IP address', () => {
    for (const text of ['localhost', '1.2.3', '256.1.1.1', '::g', '']) assert.equal(classifyAddress(text), null);
  });
});

describe('checkTargetUrl (registration)', () => {
  const refusals: Array<[string, string, RegExp]> = [
    ['https://127.0.0.1/hook', 'forbidden_address', /127\.0\.0\.1 is a loopback address/],
    ['https://10.0.0.1/hook', 'forbidden_address', /private network/],
    ['https://169.254.169.254/latest/meta-data/', 'forbidden_address', /cloud metadata/],
    ['https://[::1]/hook', 'forbidden_address', /loopback/],
    ['https://[::ffff:127.0.0.1]/hook', 'forbidden_address', /loopback address \(IPv4 127\.0\.0\.1 inside IPv6\)/],
    ['https://0.0.0.0/hook', 'forbidden_address', /unspecified/],
    ['https://2130706433/hook', 'forbidden_address', /loopback/], // decimal form of 127.0.0.1
    ['https://0x7f.1/hook', 'forbidden_address', /loopback/],
    ['http://hooks.example.com/hook', 'insecure_scheme', /https/],
    ['ftp://hooks.example.com/hook', 'unsupported_scheme', /ftp:/],
    ['https://user:pass@hooks.example.com/hook', 'credentials_in_url', /user name or password/],
    ['https://hooks.example.com/hook#frag', 'invalid_url', /fragment/],
    ['not a url', 'invalid_url', /not a valid/],
    ['https://unknown.example.com/hook', 'unresolvable_host', /does not resolve \(ENOTFOUND\)/],
  ];
  for (const [url, reason, message] of refusals) {
    it(`refuses ${url} (${reason})`, async () => {
      const outcome = await checkTargetUrl(url, {
        allowPrivateTargets: false,
        lookup: resolverOf({ 'hooks.example.com': [PUBLIC_V4] }),
      });
      assert.equal(outcome.ok ? 'accepted' : outcome.reason, reason);
      assert.match(outcome.ok ? '' : outcome.message, message);
    });
  }

  it('refuses a host name that resolves to loopback, and says so', async () => {
    const outcome = await checkTargetUrl('https://hooks.attacker.example/x', {
      allowPrivateTargets: false,
      lookup: resolverOf({ 'hooks.attacker.example': ['127.0.0.1'] }),
    });
    assert.deepEqual(outcome, {
      ok: false,
      reason: 'forbidden_address',
      message:
        'hooks.attacker.example resolves to 127.0.0.1, a loopback address; only public addresses may be reached.',
    });
  });

  it('refuses a host name when any one of its addresses is forbidden', async () => {
    const outcome = await checkTargetUrl('https://mixed.example/x', {
      allowPrivateTargets: false,
      lookup: resolverOf({ 'mixed.example': [PUBLIC_V4, '2606:4700::1', 'fd00::5'] }),
    });
    assert.equal(outcome.ok ? null : outcome.reason, 'forbidden_address');
    assert.match(outcome.ok ? '' : outcome.message, /resolves to fd00::5, a unique-local/);
  });

  it('accepts an https URL on a public host, on any port, and returns it normalized', async () => {
    const outcome = await checkTargetUrl('https://Hooks.Example.com:8443/a/../hook?x=1', {
      allowPrivateTargets: false,
      lookup: resolverOf({ 'hooks.example.com': [PUBLIC_V4, '2606:4700::1'] }),
    });
    assert.equal(outcome.ok && outcome.url.href, 'https://hooks.example.com:8443/hook?x=1');
  });

  it('with private targets allowed: http and loopback pass, metadata still does not', async () => {
    const open = { allowPrivateTargets: true, lookup: resolverOf({}) };
    assert.equal((await checkTargetUrl('http://127.0.0.1:3000/hook', open)).ok, true);
    assert.equal((await checkTargetUrl('http://host.docker.internal:3000/hook', open)).ok, true);
    const metadata = await checkTargetUrl('http://169.254.169.254/', open);
    assert.equal(metadata.ok ? null : metadata.reason, 'forbidden_address');
    assert.equal((await checkTargetUrl('http://u:p@127.0.0.1/', open)).ok, false);
  });

  it('checkTargetUrlShape never resolves names', () => {
    const lookup = resolverOf({});
    assert.equal(checkTargetUrlShape('https://anything.example/x', { allowPrivateTargets: false }).ok, true);
    assert.equal(lookup.calls.length, 0);
    assert.equal(checkTargetUrlShape('https://10.1.2.3/x', closedPolicy).ok, false);
  });
});

describe('createGuardedDispatcher (delivery)', () => {
  let receiver: WebhookReceiver;
  before(async () => {
    receiver = await startWebhookReceiver();
  });
  after(() => receiver.close());

  const headers = buildDeliveryHeaders({
    eventName: 'webhook.test',
    deliveryId: 'del_test',
    attempt: 1,
    signature: 't=1,v1=00',
    standard: { id: 'evt_test', timestamp: 1, signature: 'v1,AA==' },
  });

  async function sendWith(policy: { allowPrivateTargets: boolean; lookup: HostResolver }, url: string) {
    const dispatcher = createGuardedDispatcher(policy);
    try {
      return await sendWebhook({ url, body: '{}', headers, dispatcher, timeoutMs: 5000 });
    } finally {
      await dispatcher.close();
    }
  }

  it('refuses to connect to the loopback receiver when private targets are not allowed', async () => {
    const before = receiver.requests.length;
    const byIp = await sendWith({ allowPrivateTargets: false, lookup: resolverOf({}) }, receiver.url);
    assert.equal(byIp.error, 'ssrf_refused');
    assert.match(byIp.errorMessage ?? '', /127\.0\.0\.1 is a loopback address/);
    const lookup = resolverOf({ 'hooks.example': ['127.0.0.1'] });
    const byName = await sendWith(
      { allowPrivateTargets: false, lookup },
      `http://hooks.example:${receiver.port}/hooks`,
    );
    assert.equal(byName.error, 'ssrf_refused');
    assert.match(byName.errorMessage ?? '', /hooks\.example resolves to 127\.0\.0\.1, a loopback address/);
    assert.deepEqual(lookup.calls, ['hooks.example']);
    assert.equal(receiver.requests.length, before, 'nothing reached the receiver');
  });

  it('reaches the same receiver when private targets are allowed, at the address its resolver chose', async () => {
    const before = receiver.requests.length;
    // hooks.example does not exist in real DNS: reaching the receiver proves the connection used
    // the checked answer of the injected resolver and did not resolve the name again.
    const lookup = resolverOf({ 'hooks.example': ['127.0.0.1'] });
    const outcome = await sendWith(
      { allowPrivateTargets: true, lookup },
      `http://hooks.example:${receiver.port}/hooks`,
    );
    assert.equal(outcome.ok, true, outcome.errorMessage);
    assert.equal(receiver.requests.length, before + 1);
    assert.equal(receiver.requests.at(-1)?.headers.host, `hooks.example:${receiver.port}`);
  });

  it('defeats DNS rebinding: a name public at registration and loopback at delivery is refused', async () => {
    let answers = 0;
    const rebinding: HostResolver = async () => [{ address: answers++ === 0 ? PUBLIC_V4 : '127.0.0.1', family: 4 }];
    const url = `https://rebind.example:${receiver.port}/hooks`;
    const registration = await checkTargetUrl(url, { allowPrivateTargets: false, lookup: rebinding });
    assert.equal(registration.ok, true);
    const before = receiver.requests.length;
    const delivery = await sendWith({ allowPrivateTargets: false, lookup: rebinding }, url);
    assert.equal(delivery.error, 'ssrf_refused');
    assert.equal(receiver.requests.length, before);
  });

  it('refuses a name with a forbidden address among public ones, and IPv6 loopback literals', async () => {
    const mixed = resolverOf({ 'mixed.example': [PUBLIC_V4, '127.0.0.1'] });
    const outcome = await sendWith(
      { allowPrivateTargets: false, lookup: mixed },
      `http://mixed.example:${receiver.port}/`,
    );
    assert.equal(outcome.error, 'ssrf_refused');
    const v6 = await sendWith(closedPolicy, `http://[::ffff:127.0.0.1]:${receiver.port}/`);
    assert.equal(v6.error, 'ssrf_refused');
  });

  it('refuses metadata addresses even when private targets are allowed', async () => {
    const lookup = resolverOf({ 'metadata.example': ['169.254.169.254'] });
    const outcome = await sendWith({ allowPrivateTargets: true, lookup }, 'http://metadata.example/latest/meta-data/');
    assert.equal(outcome.error, 'ssrf_refused');
    assert.match(outcome.errorMessage ?? '', /cloud metadata/);
  });
});
