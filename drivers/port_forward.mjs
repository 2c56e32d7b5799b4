// A server a node session started, exposed (start_process expose_port): listen on SOCKET, in the
// workspace the codexec server reaches, and relay each connection to 127.0.0.1:PORT, the server
// in the sandbox's own loopback, until its process group is killed. (Python and bash sessions
// use drivers/egress_forward.py --expose; a node session's sandbox may have no Python.)
//
// Usage: node port_forward.mjs SOCKET PORT
import { chmodSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';

const [path, text] = process.argv.slice(2);
const port = Number(text);
rmSync(path, { force: true });
const server = createServer((client) => {
  const upstream = connect(port, '127.0.0.1');
  const cut = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', cut);
  upstream.on('error', cut);
  client.pipe(upstream).pipe(client);
});
server.listen(path, () => chmodSync(path, 0o600));
