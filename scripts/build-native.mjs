// Builds native/node_fork.c, the node zygote's fork addon, into dist/native/node_fork.node with
// the host's C compiler (no Node headers: the file declares what it uses). Where there is no
// compiler, or it fails, the build goes on without it and node runs start their interpreter as
// before (`codexec doctor` says which). Run by `npm run build`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist/native/node_fork.node');
mkdirSync(dirname(out), { recursive: true });
rmSync(out, { force: true });
if (process.platform !== 'linux') process.exit(0);
const compiler = process.env.CC || 'cc';
const args = ['-O2', '-Wall', '-Wextra', '-shared', '-fPIC', '-o', out, join(root, 'native/node_fork.c')];
const built = spawnSync(compiler, args, { stdio: ['ignore', 'inherit', 'inherit'] });
if (built.status !== 0) {
  rmSync(out, { force: true });
  const why = built.error ? built.error.message : `exit ${built.status}`;
  process.stderr.write(`build-native: node forks disabled (${compiler}: ${why})\n`);
}
