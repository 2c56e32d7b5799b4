// The network of install steps that run package code (src/packages/network.ts), as data: the host's
// unless the server's network is the allowlist; then a lane whose variables replace the operator's
// proxy settings, and whose socket lies in the directory given until it is closed.
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROXY_SOCKET, parseRules } from '../../src/egress/index.js';
import { openPackageNetwork } from '../../src/packages/network.js';
import { tempDir } from '../helpers/server.js';

const egress = { allowed: parseRules('example.com', 'CODEXEC_ALLOWED_DOMAINS'), denied: [] };
const python = async () => '/usr/bin/python3';
const OPERATOR = {
  PATH: '/usr/bin:/bin',
  npm_config_registry: 'https://registry.example/',
  NODE_EXTRA_CA_CERTS: '/etc/ssl/ca.pem',
  HTTPS_PROXY: 'http://corp:8080',
  http_proxy: 'http://corp:8080',
  ALL_PROXY: 'socks5://corp:1080',
  NO_PROXY: 'registry.example',
  NPM_CONFIG_PROXY: 'http://corp:8080',
  npm_config_noproxy: 'registry.example',
  PIP_PROXY: 'http://corp:8080',
};

describe('openPackageNetwork', () => {
  const dir = tempDir('codexec-package-network-');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(['host', 'none'] as const)(
    'network %s: the host network, the environment as it is',
    async (network) => {
      const opened = await openPackageNetwork({ network, egress }, 'socket', dir, python);
      expect(opened.spec).toEqual({ network: 'host' });
      expect(opened.env(OPERATOR)).toEqual(OPERATOR);
      expect(opened.denied()).toBeUndefined();
      await opened.close();
    },
  );

  it("allowlist: a lane in the directory; its proxy variables replace the operator's", async () => {
    const opened = await openPackageNetwork({ network: 'allowlist', egress }, 'socket', dir, python);
    try {
      expect(opened.spec).toEqual({
        network: 'allowlist',
        egress: { socket: join(dir, PROXY_SOCKET), port: 3128, python: '/usr/bin/python3' },
      });
      expect(existsSync(join(dir, PROXY_SOCKET))).toBe(true);
      const env = opened.env(OPERATOR);
      expect(env).toMatchObject({
        PATH: '/usr/bin:/bin',
        npm_config_registry: 'https://registry.example/',
        NODE_EXTRA_CA_CERTS: '/etc/ssl/ca.pem',
        HTTPS_PROXY: 'http://127.0.0.1:3128',
        http_proxy: 'http://127.0.0.1:3128',
        npm_config_https_proxy: 'http://127.0.0.1:3128',
        PIP_PROXY: 'http://127.0.0.1:3128',
        NO_PROXY: 'localhost,127.0.0.1,::1',
      });
      for (const name of ['ALL_PROXY', 'NPM_CONFIG_PROXY', 'npm_config_noproxy'])
        expect(env).not.toHaveProperty(name);
      expect(opened.denied()).toBeUndefined();
    } finally {
      await opened.close();
    }
    expect(existsSync(join(dir, PROXY_SOCKET))).toBe(false);
  });

  it('allowlist in landlock mode: a port on the host loopback, no socket', async () => {
    const opened = await openPackageNetwork({ network: 'allowlist', egress }, 'port', dir, python);
    try {
      expect(opened.spec.egress?.socket).toBeUndefined();
      expect(opened.env({}).HTTPS_PROXY).toBe(`http://127.0.0.1:${opened.spec.egress?.port}`);
    } finally {
      await opened.close();
    }
  });
});
