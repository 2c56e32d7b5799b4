// Builds codexec's two native parts with the host's C compiler (no Node headers: the files declare
// what they use), each into dist/native/. Where there is no compiler, or it fails, the build goes
// on without that part and codexec does without it (`codexec doctor` says which):
// - native/node_fork.c, the node zygote's fork addon: without it node runs start their interpreter;
// - native/nest.c, which makes zygote runs' sandboxes from a template: without it, bwrap does,
//   one per run. Linked statically where the C library allows (no dynamic loader per sandbox).
// Run by `npm run build`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'dist/native');
mkdirSync(dir, { recursive: true });
const compiler = process.env.CC || 'cc';
const flags = ['-O2', '-Wall', '-Wextra'];

/** Compile with each set of extra flags in turn until one succeeds; false if none did. */
function build(out, source, variants) {
  rmSync(out, { force: true });
  if (process.platform !== 'linux') return true;
  let why = '';
  for (const extra of variants) {
    const built = spawnSync(compiler, [...flags, ...extra, '-o', out, join(root, source)], {
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
    });
    if (built.status === 0) return true;
    why = built.error ? built.error.message : `exit ${built.status}: ${built.stderr.trim()}`;
  }
  rmSync(out, { force: true });
  process.stderr.write(`build-native: ${source} not built (${compiler}: ${why})\n`);
  return false;
}

if (!build(join(dir, 'node_fork.node'), 'native/node_fork.c', [['-shared', '-fPIC']]))
  process.stderr.write('build-native: node forks disabled\n');
if (!build(join(dir, 'nest'), 'native/nest.c', [['-static'], []]))
  process.stderr.write('build-native: zygote sandboxes made by bwrap\n');
