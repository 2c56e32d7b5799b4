// What `npm pack` ships (the tarball must install globally and work): every runtime file
// — the built server, every driver, server.json, Dockerfile.sandbox — and nothing of the tests; server.json agrees
// with package.json. The install itself is scripts/pack-smoke.sh, run by .ci/run after npm test
// (better-sqlite3 compiles from source there: minutes, too slow for npm test).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const server = JSON.parse(readFileSync(join(ROOT, 'server.json'), 'utf8'));

function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}

describe('the npm package', () => {
  it('ships the built server, every driver, server.json, README and LICENSE, and no tests', () => {
    const [report] = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
        cwd: ROOT,
        encoding: 'utf8',
      }),
    ) as Array<{ files: Array<{ path: string }> }>;
    const shipped = new Set(report?.files.map((file) => file.path));
    for (const file of [
      ...filesUnder('drivers'),
      'dist/cli.js',
      'dist/server/index.js',
      'server.json',
      'Dockerfile.sandbox',
      'README.md',
      'LICENSE',
    ]) {
      expect(shipped.has(file), file).toBe(true);
    }
    expect([...shipped].filter((file) => file.startsWith('test/') || file.startsWith('src/'))).toEqual([]);
  });

  it('is described for the MCP registry by server.json, in step with package.json', () => {
    expect(server.name).toBe(pkg.mcpName);
    expect(server.version).toBe(pkg.version);
    expect(server.description.length).toBeLessThanOrEqual(100);
    const [npm] = server.packages;
    expect(npm).toMatchObject({ registryType: 'npm', identifier: pkg.name, version: pkg.version });
    expect(npm.transport).toEqual({ type: 'stdio' });
    expect(pkg.repository.url).toContain(server.repository.url.replace('https://', ''));
    expect(pkg.bin.codexec).toBe('dist/cli.js');
  });
});
