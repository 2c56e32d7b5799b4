// The egress allowlist's rules (CODEXEC_NETWORK=allowlist): parsing, matching, the denied list
// winning, a call narrowing, and internal addresses a public name resolves to.
import { describe, expect, it } from 'vitest';
import { embeddedV4, isPublicAddress, v6Bytes } from '../../src/egress/addresses.js';
import { denies, EgressRules, matches, parseRules } from '../../src/egress/rules.js';

const rules = (list: string) => parseRules(list, 'CODEXEC_ALLOWED_DOMAINS');

describe('parseRules', () => {
  it('reads names, wildcards, ports, IP literals; lowercase, no trailing dot', () => {
    expect(
      rules(' Registry.NPMJS.org. , *.example.com:8443, 10.0.0.5:8080, [::1]:3000, [2001:db8::1] '),
    ).toEqual([
      { host: 'registry.npmjs.org', wildcard: false, text: 'Registry.NPMJS.org.' },
      { host: 'example.com', wildcard: true, port: 8443, text: '*.example.com:8443' },
      { host: '10.0.0.5', wildcard: false, port: 8080, text: '10.0.0.5:8080' },
      { host: '::1', wildcard: false, port: 3000, text: '[::1]:3000' },
      { host: '2001:db8::1', wildcard: false, text: '[2001:db8::1]' },
    ]);
    expect(rules('')).toEqual([]);
  });

  it.each([
    ['exa mple.com', 'is not a host name'],
    ['example.com:http', 'has a port that is not a number'],
    ['example.com:70000', 'outside 1-65535'],
    ['*.com', 'wildcard of a top-level domain'],
    ['*.10.0.0.1', 'wildcard of an IP address'],
    ['[example.com]', 'not an IPv6 address'],
    ['-bad.example.com', 'is not a host name'],
    ['a..b', 'is not a host name'],
  ])('refuses %s, naming the setting and the entry', (entry, why) => {
    expect(() => rules(`ok.example, ${entry}`)).toThrow(`CODEXEC_ALLOWED_DOMAINS: "${entry}" `);
    expect(() => rules(entry)).toThrow(why);
  });
});

describe('matches', () => {
  const rule = (text: string) => {
    const [parsed] = rules(text);
    if (!parsed) throw new Error(`no rule in ${text}`);
    return parsed;
  };
  const exact = rule('api.example.com');
  const wild = rule('*.example.org');
  const ported = rule('cdn.example.net:8443');
  it('a rule without a port allows 443 and 80 only', () => {
    expect(matches(exact, 'api.example.com', 443)).toBe(true);
    expect(matches(exact, 'api.example.com', 80)).toBe(true);
    expect(matches(exact, 'api.example.com', 22)).toBe(false);
    expect(matches(exact, 'x.api.example.com', 443)).toBe(false);
  });
  it('a wildcard names what is below it, never the name itself or a look-alike', () => {
    expect(matches(wild, 'a.example.org', 443)).toBe(true);
    expect(matches(wild, 'b.a.example.org', 443)).toBe(true);
    expect(matches(wild, 'example.org', 443)).toBe(false);
    expect(matches(wild, 'evilexample.org', 443)).toBe(false);
    expect(matches(wild, 'example.org.evil.com', 443)).toBe(false);
  });
  it('a wildcard never names an IP address by its text', () => {
    expect(matches(rule('*.0.0.1:8080'), '127.0.0.1', 8080)).toBe(false);
    expect(matches(rule('*.0.0.1:8080'), 'a.0.0.1', 8080)).toBe(true);
  });
  it('a port names that port alone', () => {
    expect(matches(ported, 'cdn.example.net', 8443)).toBe(true);
    expect(matches(ported, 'cdn.example.net', 443)).toBe(false);
  });
  it('a denying rule without a port names every port; with one, that port alone', () => {
    for (const port of [443, 80, 22, 8443, 65535]) {
      expect(denies(exact, 'api.example.com', port)).toBe(true);
      expect(denies(wild, 'a.example.org', port)).toBe(true);
    }
    expect(denies(exact, 'x.api.example.com', 8443)).toBe(false);
    expect(denies(wild, 'example.org', 8443)).toBe(false);
    expect(denies(ported, 'cdn.example.net', 8443)).toBe(true);
    expect(denies(ported, 'cdn.example.net', 443)).toBe(false);
  });
});

describe('EgressRules', () => {
  const server = new EgressRules(
    rules('*.example.com, registry.test, 127.0.0.1:5000, internal.test'),
    rules('secret.example.com'),
  );

  it('allows what the list names, case and trailing dot aside', () => {
    expect(server.decide('API.example.com.', 443)).toEqual({ allowed: true, rule: '*.example.com' });
    expect(server.decide('registry.test', 80)).toEqual({ allowed: true, rule: 'registry.test' });
  });

  it('refuses what it does not name, saying so', () => {
    expect(server.decide('other.test', 443)).toMatchObject({ allowed: false });
    expect(server.decide('other.test', 443).reason).toContain('not on the allowed list');
    // Only that refusal may be put to a person.
    expect(server.decide('other.test', 443).askable).toBe(true);
    expect(server.decide('secret.example.com', 443).askable).toBeUndefined();
    expect(server.narrow(rules('registry.test')).decide('a.example.com', 443).askable).toBeUndefined();
    expect(server.decideAddress('a.example.com', 443, '10.0.0.1').askable).toBeUndefined();
    expect(server.decide('registry.test', 22).allowed).toBe(false);
  });

  it('lets the denied list win', () => {
    expect(server.decide('secret.example.com', 443)).toMatchObject({
      allowed: false,
      rule: 'secret.example.com',
    });
    expect(server.decide('a.example.com', 443).allowed).toBe(true);
  });

  it('a denied name without a port is denied on the ports an allowed rule opens', () => {
    const corp = new EgressRules(
      rules('*.corp.example:8443, 10.0.0.9:2222'),
      rules('secret.corp.example, 10.0.0.9'),
    );
    expect(corp.decide('api.corp.example', 8443).allowed).toBe(true);
    expect(corp.decide('secret.corp.example', 8443)).toEqual({
      allowed: false,
      rule: 'secret.corp.example',
      reason: 'denied by secret.corp.example',
    });
    expect(corp.decide('SECRET.corp.example.', 8443).allowed).toBe(false);
    expect(corp.decideAddress('secret.corp.example', 8443, '93.184.216.34').allowed).toBe(false);
    expect(corp.decide('10.0.0.9', 2222).rule).toBe('10.0.0.9');
    // With a port, a denied rule denies that port alone.
    const ported = new EgressRules(
      rules('*.corp.example:8443, *.corp.example'),
      rules('secret.corp.example:443'),
    );
    expect(ported.decide('secret.corp.example', 443).allowed).toBe(false);
    expect(ported.decide('secret.corp.example', 8443).allowed).toBe(true);
  });

  it('a call narrows, never widens; narrowing twice keeps both', () => {
    const call = server.narrow(rules('a.example.com, elsewhere.test'));
    expect(call.decide('a.example.com', 443).allowed).toBe(true);
    expect(call.decide('b.example.com', 443).reason).toContain("not in this call's allowed_domains");
    // On the call's list but not the server's: still refused.
    expect(call.decide('elsewhere.test', 443).reason).toContain('not on the allowed list');
    const twice = call.narrow(rules('b.example.com'));
    expect(twice.decide('a.example.com', 443).allowed).toBe(false);
    expect(twice.decide('b.example.com', 443).allowed).toBe(false);
    // The server's rules are untouched by a call's.
    expect(server.decide('b.example.com', 443).allowed).toBe(true);
  });

  it('refuses internal addresses a name resolves to unless that very name is listed', () => {
    // DNS rebinding: a wildcard-allowed public name answering 127.0.0.1 or 10.x.
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '192.168.0.9',
      '169.254.169.254',
      '::1',
      'fd00::1',
      '::ffff:127.0.0.1',
    ])
      expect(server.decideAddress('rebind.example.com', 443, address)).toMatchObject({ allowed: false });
    expect(server.decideAddress('rebind.example.com', 443, '93.184.216.34').allowed).toBe(true);
    // Listed by name: the operator meant it.
    expect(server.decideAddress('internal.test', 443, '10.0.0.7').allowed).toBe(true);
    // An IP literal listed with its port.
    expect(server.decideAddress('127.0.0.1', 5000, '127.0.0.1').allowed).toBe(true);
    expect(server.decideAddress('127.0.0.1', 5001, '127.0.0.1').allowed).toBe(false);
  });

  it('refuses each internal form a name may resolve to', () => {
    for (const address of INTERNAL)
      expect(server.decideAddress('rebind.example.com', 443, address), address).toMatchObject({
        allowed: false,
        reason: `rebind.example.com resolved to ${address}, an internal address; list rebind.example.com itself to allow it`,
      });
    for (const address of PUBLIC)
      expect(server.decideAddress('rebind.example.com', 443, address).allowed, address).toBe(true);
  });
});

/** Not public: loopback, private, shared, reserved, and IPv6 forms that carry such an IPv4. */
const INTERNAL = [
  '127.0.0.1',
  '10.0.0.1',
  '172.16.5.4',
  '192.168.1.1',
  '100.64.0.1',
  '169.254.169.254',
  '0.0.0.0',
  '198.18.0.1', // benchmarking (198.18.0.0/15)
  '198.19.255.254',
  '192.0.0.8',
  '192.0.2.1',
  '198.51.100.7',
  '203.0.113.9',
  '224.0.0.251',
  '240.0.0.1',
  '255.255.255.255',
  '::',
  '::1',
  'fe80::1',
  'fe80::1%1',
  'fc00::1',
  'fd12:3456::1',
  'fec0::1', // site-local (fec0::/10)
  'feff::1',
  'ff02::1',
  '100::1',
  '::ffff:127.0.0.1', // v4-mapped
  '::ffff:7f00:1',
  '0:0:0:0:0:ffff:a00:1',
  '::127.0.0.1', // v4-compatible
  '::a00:1',
  '::169.254.169.254',
  '64:ff9b::127.0.0.1', // NAT64
  '64:ff9b::a9fe:a9fe',
  '64:ff9b:1::8.8.8.8', // local-use NAT64: no fixed place for the IPv4 address
  '2002:7f00:1::', // 6to4 of 127.0.0.1
  '2002:a00:1::1',
  '2002:c0a8:101:1::1',
  '2001::1', // Teredo
  '2001:2::1', // benchmarking
  '2001:db8::1',
  '3fff::1',
  '5f00::1',
  '::ffff:0:7f00:1', // IPv4-translated: outside global unicast
  'not-an-address',
];
const PUBLIC = [
  '8.8.8.8',
  '93.184.216.34',
  '172.32.0.1',
  '198.20.0.1',
  '2001:4860::8888',
  '2606:4700::1111',
  '::ffff:8.8.8.8',
  '64:ff9b::808:808',
  '2002:808:808::1',
];

describe('isPublicAddress', () => {
  it.each(INTERNAL)('%s is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });
  it.each(PUBLIC)('%s is public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it('reads IPv6 text into its bytes, and finds the IPv4 address a form carries', () => {
    const hex = (text: string) => Buffer.from(v6Bytes(text) ?? []).toString('hex');
    expect(hex('::')).toBe('0'.repeat(32));
    expect(hex('::1')).toBe(`${'0'.repeat(31)}1`);
    expect(hex('1::')).toBe(`0001${'0'.repeat(28)}`);
    expect(hex('1:2:3:4:5:6:7:8')).toBe('00010002000300040005000600070008');
    expect(hex('::ffff:1.2.3.4')).toBe('00000000000000000000ffff01020304');
    expect(hex('fe80::1%eth0')).toBe('fe800000000000000000000000000001');
    expect(v6Bytes('1.2.3.4')).toBeUndefined();
    expect(v6Bytes('1:2:3')).toBeUndefined();
    const v4 = (text: string) => embeddedV4(v6Bytes(text) as Uint8Array);
    expect(v4('::ffff:a00:1')).toBe('10.0.0.1');
    expect(v4('::10.0.0.1')).toBe('10.0.0.1');
    expect(v4('64:ff9b::10.0.0.1')).toBe('10.0.0.1');
    expect(v4('2002:a00:1:5::1')).toBe('10.0.0.1');
    expect(v4('2001:4860::8888')).toBeUndefined();
    expect(v4('64:ff9b:0:0:1::a00:1')).toBeUndefined();
  });
});
