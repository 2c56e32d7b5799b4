// The image's command lines and records as data: no engine needed.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  type ContainerEngine,
  dockerfileBuildArgs,
  IMAGE_LABELS,
  imageLabels,
  importArgs,
  importChanges,
} from '../../../src/sandbox/container/index.js';
import { parseLdd } from '../../../src/sandbox/container/ldd.js';
import { tarEntries } from '../../../src/sandbox/container/tar.js';

const podman: ContainerEngine = {
  name: 'podman',
  binary: '/usr/bin/podman',
  global: ['--runtime', 'runc'],
  version: '4',
};
const paths = { python: '/usr/bin/python3.11', node: '/usr/bin/node', bash: '/usr/bin/bash' };

describe('image command lines', () => {
  it('imports with the global options first and one --change per instruction', () => {
    const changes = importChanges('/usr/bin:/bin', imageLabels(paths, true));
    expect(changes).toContain('USER 65534:65534');
    expect(changes).toContain('WORKDIR /workspace');
    expect(changes).toContain('ENV PATH=/usr/bin:/bin');
    expect(changes).toContain('LABEL codexec.python="/usr/bin/python3.11"');
    expect(changes).toContain('LABEL codexec.from-host="1"');
    const args = importArgs(podman, 'img', changes);
    expect(args.slice(0, 3)).toEqual(['--runtime', 'runc', 'import']);
    expect(args.slice(-2)).toEqual(['-', 'img']);
    expect(args.filter((arg) => arg === '--change')).toHaveLength(changes.length);
  });

  it('builds the Dockerfile with the package as context', () => {
    expect(dockerfileBuildArgs(podman, 'img', '/p/Dockerfile.sandbox', '/p')).toEqual([
      ...['--runtime', 'runc', 'build', '-t', 'img', '-f', '/p/Dockerfile.sandbox', '/p'],
    ]);
  });

  it('Dockerfile.sandbox sets every label the from-host image sets', () => {
    const dockerfile = readFileSync(
      fileURLToPath(new URL('../../../Dockerfile.sandbox', import.meta.url)),
      'utf8',
    );
    for (const key of Object.values(IMAGE_LABELS)) expect(dockerfile).toMatch(new RegExp(`${key}="[^"]+"`));
    expect(dockerfile).toContain('codexec.from-host="0"');
  });
});

describe('image records', () => {
  it('reads the libraries and the loader out of ldd output, and nothing else', () => {
    const output = [
      '/usr/bin/node:',
      '\tlinux-vdso.so.1 (0x00007ff4c573e000)',
      '\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007ff4c5648000)',
      '\tlibgone.so.1 => not found',
      '\t/lib64/ld-linux-x86-64.so.2 (0x00007ff4c5740000)',
      '/usr/bin/script:',
      '\tnot a dynamic executable',
    ].join('\n');
    expect(parseLdd(output)).toEqual(['/lib/x86_64-linux-gnu/libm.so.6', '/lib64/ld-linux-x86-64.so.2']);
  });

  it('writes ustar records GNU tar lists with their modes and owners', () => {
    const records = tarEntries([
      { name: 'tmp', type: 'dir', mode: 0o1777 },
      { name: 'workspace', type: 'dir', mode: 0o755, uid: 65534, gid: 65534 },
      { name: 'etc/passwd', type: 'file', mode: 0o644, content: 'root:x:0:0::/root:/bin/sh\n' },
    ]);
    const archive = Buffer.concat([records, Buffer.alloc(1024)]);
    const listing = spawnSync('tar', ['-tvf', '-', '--numeric-owner'], { input: archive, encoding: 'utf8' });
    expect(listing.stderr).toBe('');
    const lines = listing.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^drwxrwxrwt 0\/0 +0 .* tmp\/$/);
    expect(lines[1]).toMatch(/^drwxr-xr-x 65534\/65534 +0 .* workspace\/$/);
    expect(lines[2]).toMatch(/^-rw-r--r-- 0\/0 +26 .* etc\/passwd$/);
  });
});
