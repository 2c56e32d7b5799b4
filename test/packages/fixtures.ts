// Packages made in the test (PyPI is not reachable here) and a local registry that serves them
// and records what the installers asked for.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

/**
 * Build a minimal pure-Python wheel by hand into `dir`; returns its file name. Its module sets
 * VALUE to `value`, or is `source` when given.
 */
export function buildWheel(
  dir: string,
  name = 'codexec_demo',
  version = '1.2.3',
  value = 42,
  source?: string,
): string {
  const script = `
import zipfile, hashlib, base64, sys
name, ver = sys.argv[2], sys.argv[3]
files = {f'{name}/__init__.py': sys.argv[5] if len(sys.argv) > 5 else f'VALUE = {sys.argv[4]}\\n',
  f'{name}-{ver}.dist-info/METADATA': f'Metadata-Version: 2.1\\nName: {name.replace("_", "-")}\\nVersion: {ver}\\n',
  f'{name}-{ver}.dist-info/WHEEL': 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n'}
record = []
with zipfile.ZipFile(f'{sys.argv[1]}/{name}-{ver}-py3-none-any.whl', 'w') as z:
    for path, text in files.items():
        z.writestr(path, text)
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()
        record.append(f'{path},sha256={digest},{len(text)}')
    record.append(f'{name}-{ver}.dist-info/RECORD,,')
    z.writestr(f'{name}-{ver}.dist-info/RECORD', '\\n'.join(record) + '\\n')
`;
  execFileSync('python3', [
    '-c',
    script,
    dir,
    name,
    version,
    String(value),
    ...(source === undefined ? [] : [source]),
  ]);
  return `${name}-${version}-py3-none-any.whl`;
}

/** Build an npm package tarball (`package/…`, as `npm pack` lays it out) exporting `value`. */
export function buildNpmTarball(dir: string, name: string, version: string, value: string): Buffer {
  const root = join(dir, `${name}-${version}`);
  mkdirSync(join(root, 'package'), { recursive: true });
  writeFileSync(join(root, 'package', 'package.json'), JSON.stringify({ name, version, main: 'index.js' }));
  writeFileSync(join(root, 'package', 'index.js'), `module.exports = ${JSON.stringify(value)};\n`);
  const file = join(root, 'package.tgz');
  execFileSync('tar', ['-czf', file, '-C', root, 'package']);
  return readFileSync(file);
}

/** A self-signed certificate for 127.0.0.1 (its own CA), as a registry behind a private CA has. */
export function selfSignedCert(dir: string): { key: string; cert: string; certPath: string } {
  const key = join(dir, 'registry-key.pem');
  const certPath = join(dir, 'registry-cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      certPath,
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(certPath, 'utf8'), certPath };
}

export interface LocalRegistry {
  /** `http(s)://<host>:<port>` (127.0.0.1 unless RegistryContent.host) */
  readonly url: string;
  /** Every request path, in order. */
  readonly requests: string[];
  close(): Promise<void>;
}

export interface RegistryContent {
  /** npm packages: name → version → tarball. */
  readonly npm?: Record<string, { version: string; tarball: Buffer }>;
  /** PEP 503 projects (normalized names) → wheel file name and bytes. */
  readonly pypi?: Record<string, { file: string; bytes: Buffer }>;
  /** Serve HTTPS with this key and certificate instead of HTTP. */
  readonly tls?: { readonly key: string; readonly cert: string };
  /** The loopback address to listen on (default 127.0.0.1; sandboxes' proxy variables skip that one). */
  readonly host?: string;
}

/** An npm registry and a PEP 503 "simple" index in one tiny HTTP server on loopback. */
export async function startRegistry(content: RegistryContent): Promise<LocalRegistry> {
  const requests: string[] = [];
  const files = new Map<string, Buffer>();
  let url = '';
  const handler: Parameters<typeof createServer>[1] = (req, res) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0] ?? '/');
    requests.push(path);
    const file = files.get(path);
    if (file) return res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(file);
    const simple = /^\/simple\/([^/]+)\/?$/.exec(path);
    const wheel = simple?.[1] ? content.pypi?.[simple[1]] : undefined;
    if (wheel) {
      const sha256 = createHash('sha256').update(wheel.bytes).digest('hex');
      const href = `${url}/files/${wheel.file}#sha256=${sha256}`;
      return res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(`<!DOCTYPE html><html><body><a href="${href}">${wheel.file}</a></body></html>`);
    }
    const npm = content.npm?.[path.slice(1)];
    if (npm)
      return res.writeHead(200, { 'content-type': 'application/json' }).end(packument(path.slice(1), npm));
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
  };
  const server = content.tls ? createTlsServer(content.tls, handler) : createServer(handler);
  const host = content.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  url = `${content.tls ? 'https' : 'http'}://${host}:${(server.address() as AddressInfo).port}`;
  for (const wheel of Object.values(content.pypi ?? {})) files.set(`/files/${wheel.file}`, wheel.bytes);
  for (const [name, pkg] of Object.entries(content.npm ?? {})) {
    files.set(`/${name}/-/${name}-${pkg.version}.tgz`, pkg.tarball);
  }

  function packument(name: string, pkg: { version: string; tarball: Buffer }): string {
    const dist = {
      tarball: `${url}/${name}/-/${name}-${pkg.version}.tgz`,
      shasum: createHash('sha1').update(pkg.tarball).digest('hex'),
      integrity: `sha512-${createHash('sha512').update(pkg.tarball).digest('base64')}`,
    };
    return JSON.stringify({
      name,
      'dist-tags': { latest: pkg.version },
      versions: { [pkg.version]: { name, version: pkg.version, dist } },
    });
  }

  return {
    url,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
