// What a workspace holds, as the disk bounds measure it: allocated blocks, hard links once,
// symbolic links as links (never what they point to), and a bound on the entries walked.
import { linkSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DiskQuota, measureDir } from '../../src/disk/index.js';
import { tempDir } from '../helpers/server.js';

const root = tempDir('codexec-usage-');
afterAll(() => rmSync(root, { recursive: true, force: true }));
const MB = 1024 * 1024;

describe('measureDir', () => {
  it('counts blocks, hard links once, and never follows a symbolic link', async () => {
    const host = join(root, 'host');
    const ws = join(root, 'ws');
    mkdirSync(host);
    mkdirSync(join(ws, 'sub'), { recursive: true });
    writeFileSync(join(host, 'huge.bin'), Buffer.alloc(8 * MB, 1));
    writeFileSync(join(ws, 'sub', 'data.bin'), Buffer.alloc(2 * MB, 1));
    linkSync(join(ws, 'sub', 'data.bin'), join(ws, 'again.bin'));
    symlinkSync(host, join(ws, 'to-host'));
    symlinkSync(join(host, 'huge.bin'), join(ws, 'huge-link'));
    const usage = await measureDir(ws);
    expect(usage.complete).toBe(true);
    expect(usage.bytes).toBeGreaterThanOrEqual(2 * MB);
    expect(usage.bytes).toBeLessThan(3 * MB);
  });

  it('stops at its entry bound and says the count is a lower bound', async () => {
    const many = join(root, 'many');
    mkdirSync(many);
    for (let i = 0; i < 30; i++) writeFileSync(join(many, `f${i}`), 'x');
    expect(await measureDir(many, 10)).toMatchObject({ entries: 10, complete: false });
  });
});

describe('DiskQuota', () => {
  it('sums per principal as sizes change and refuses a principal at its quota', () => {
    const quota = new DiskQuota({ workspaceMb: 10, principalMb: 20, retentionMs: 3_600_000 });
    quota.record('/s/exec_1', 'alice', 8 * MB);
    quota.record('/s/exec_2', 'alice', 8 * MB);
    quota.record('/s/exec_3', 'bob', 15 * MB);
    expect(quota.used('alice')).toBe(16 * MB);
    expect(() => quota.assertRoom('alice')).not.toThrow();
    expect(quota.check('/s/exec_2', 'alice', 11 * MB)).toContain('CODEXEC_MAX_WORKSPACE_MB=10');
    expect(quota.check('/s/exec_2', 'alice', 9 * MB)).toBeUndefined();
    expect(quota.check('/s/exec_4', 'alice', 4 * MB)).toContain('CODEXEC_MAX_PRINCIPAL_DISK_MB=20');
    // Over the principal's quota, a workspace that did not grow is left alone.
    expect(quota.check('/s/exec_1', 'alice', 8 * MB)).toBeUndefined();
    expect(() => quota.assertRoom('alice')).toThrow(expect.objectContaining({ code: 'LIMIT_REACHED' }));
    expect(() => quota.assertRoom('bob')).not.toThrow();
    quota.forget('/s/exec_4');
    quota.forget('/s/exec_1');
    expect(quota.used('alice')).toBe(9 * MB);
    expect(() => quota.assertRoom('alice')).not.toThrow();
  });
});
