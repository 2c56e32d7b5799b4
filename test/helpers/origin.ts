// An origin on the host's loopback that counts the connections that reached it (what code must
// not reach unasked), and the Python that fetches it through the egress proxy.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export interface Origin {
  readonly port: number;
  accepted: number;
  readonly server: Server;
}

export async function origin(): Promise<Origin> {
  const server = createServer((_request, response) => response.end('hello'));
  const state = { accepted: 0, server, port: 0 };
  server.on('connection', () => {
    state.accepted++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.port = (server.address() as AddressInfo).port;
  return state;
}

/**
 * Python fetching the origin through the proxy (no_proxy dropped: the origin is on the host's
 * loopback); prints `[status, body]`. A marker comment tells runs apart.
 */
export const fetchCode = (port: number, marker = '') => `
# ${marker}
import json, os, urllib.request, urllib.error
for name in ("no_proxy", "NO_PROXY"):
    os.environ.pop(name, None)
try:
    with urllib.request.urlopen("http://127.0.0.1:${port}/hello", timeout=30) as response:
        print(json.dumps([response.status, response.read().decode()]))
except urllib.error.HTTPError as error:
    print(json.dumps([error.code, ""]))
`;

/**
 * A self-signed certificate for localhost and 127.0.0.1 (a day long), made by openssl in `dir`:
 * `cert.pem` and `key.pem` there, and their text.
 */
export function selfSignedCert(dir: string): { readonly key: string; readonly cert: string } {
  execFileSync('openssl', [
    ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost'],
    ...['-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
    ...['-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
  ]);
  return {
    key: readFileSync(join(dir, 'key.pem'), 'utf8'),
    cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
  };
}
