// An origin on the host's loopback that counts the connections that reached it (what code must
// not reach unasked), and the Python that fetches it through the egress proxy.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

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
