// The copy of /etc a sandbox binds (src/sandbox/namespace/etc.ts), on a fake /etc: what is copied,
// what never is, and how a host change reaches the next sandbox without pulling the copy from
// under one still running.

import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EtcCopies } from '../../src/sandbox/namespace/etc.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function fakeEtc(): { source: string; base: string } {
  const source = mkdtempSync(join(tmpdir(), 'codexec-fake-etc-'));
  const base = mkdtempSync(join(tmpdir(), 'codexec-etc-base-'));
  made.push(source, base);
  writeFileSync(join(source, 'hosts'), '127.0.0.1 localhost\n');
  writeFileSync(join(source, 'zone'), 'TZif');
  symlinkSync(join(source, 'zone'), join(source, 'localtime'));
  mkdirSync(join(source, 'python3.11'));
  writeFileSync(join(source, 'python3.11', 'sitecustomize.py'), 'x = 1\n');
  symlinkSync('../hosts', join(source, 'python3.11', 'relative'));
  writeFileSync(join(source, 'python3.11', 'secret'), 'key', { mode: 0o600 });
  chmodSync(join(source, 'python3.11', 'secret'), 0o600);
  mkdirSync(join(source, 'python3.11', 'private'), { mode: 0o700 });
  chmodSync(join(source, 'python3.11', 'private'), 0o700);
  writeFileSync(join(source, 'python3.11', 'private', 'inside'), 'hidden');
  writeFileSync(join(source, 'shadow'), 'root:x', { mode: 0o640 });
  chmodSync(join(source, 'shadow'), 0o640);
  mkdirSync(join(source, 'ssl'));
  writeFileSync(join(source, 'ssl', 'cert.pem'), 'cert');
  writeFileSync(join(source, 'pki'), 'a file where a directory is usual');
  return { source, base };
}

const ENTRIES = ['hosts', 'localtime', 'python3.11', 'shadow', 'missing'];

describe('EtcCopies', () => {
  it('copies what all may read, follows a top-level link, keeps inner links, leaves bound entries as mount points', () => {
    const { source, base } = fakeEtc();
    const copies = new EtcCopies(source, ENTRIES, ['ssl', 'pki'], { base });
    const lease = copies.acquire();
    if (!lease) throw new Error('no copy');
    const { dir } = lease;
    expect(readdirSync(dir).sort()).toEqual(['hosts', 'localtime', 'pki', 'python3.11', 'ssl']);
    expect(statSync(dir).mode & 0o777).toBe(0o755);
    expect(lstatSync(join(dir, 'localtime')).isFile()).toBe(true);
    expect(readFileSync(join(dir, 'localtime'), 'utf8')).toBe('TZif');
    expect(readlinkSync(join(dir, 'python3.11', 'relative'))).toBe('../hosts');
    // Never copied: a 0600 file, a 0700 directory, a 0640 file at the top.
    expect(readdirSync(join(dir, 'python3.11')).sort()).toEqual(['relative', 'sitecustomize.py']);
    expect(readdirSync(join(dir, 'ssl'))).toEqual([]);
    expect(readFileSync(join(dir, 'pki'), 'utf8')).toBe('');
    expect(statSync(join(dir, 'ssl')).mode & 0o777).toBe(0o755);
    lease.release();
    copies.dispose();
    expect(existsSync(dir)).toBe(false);
  });

  it("writes codexec's own files into every copy, with their mode", () => {
    const { source, base } = fakeEtc();
    const files = [{ name: 'codexec-drop', content: Buffer.from('\x7fELF'), mode: 0o555 }];
    const copies = new EtcCopies(source, ENTRIES, [], { base, checkMs: 1000, files });
    const first = copies.acquire(10_000);
    writeFileSync(join(source, 'hosts'), '10.0.0.2 db\n');
    const second = copies.acquire(12_000);
    expect(second?.dir).not.toBe(first?.dir);
    for (const dir of [first?.dir, second?.dir] as string[]) {
      expect(readFileSync(join(dir, 'codexec-drop'), 'latin1')).toBe('\x7fELF');
      expect(statSync(join(dir, 'codexec-drop')).mode & 0o7777).toBe(0o555);
    }
    copies.dispose();
  });

  it('hands out the same copy until the host changes, then a new one after the check interval', () => {
    const { source, base } = fakeEtc();
    const copies = new EtcCopies(source, ENTRIES, ['ssl'], { base, checkMs: 1000 });
    const first = copies.acquire(10_000);
    expect(copies.acquire(10_500)?.dir).toBe(first?.dir);
    expect(copies.acquire(11_000)?.dir).toBe(first?.dir); // checked, nothing changed
    // A package manager's replace: a new file renamed over the old one.
    writeFileSync(join(source, 'hosts.new'), '10.0.0.1 db\n');
    renameSync(join(source, 'hosts.new'), join(source, 'hosts'));
    expect(copies.acquire(11_500)?.dir).toBe(first?.dir); // not checked yet
    const second = copies.acquire(12_000);
    expect(second?.dir).not.toBe(first?.dir);
    expect(readFileSync(join(second?.dir as string, 'hosts'), 'utf8')).toBe('10.0.0.1 db\n');
    // An edit in place inside a copied directory shows in the directory's listing stamps.
    writeFileSync(join(source, 'python3.11', 'sitecustomize.py'), 'x = 2\n');
    const third = copies.acquire(13_000);
    expect(readFileSync(join(third?.dir as string, 'python3.11', 'sitecustomize.py'), 'utf8')).toBe(
      'x = 2\n',
    );
    copies.dispose();
  });

  it('copies a directory of links as links, and sees one replaced by its directory alone', () => {
    const { source, base } = fakeEtc();
    mkdirSync(join(source, 'alternatives'));
    symlinkSync('/usr/bin/python3.11', join(source, 'alternatives', 'python'));
    const copies = new EtcCopies(source, [...ENTRIES, 'alternatives'], [], {
      base,
      checkMs: 1000,
      linksOnly: ['alternatives'],
    });
    const first = copies.acquire(10_000);
    expect(readlinkSync(join(first?.dir as string, 'alternatives', 'python'))).toBe('/usr/bin/python3.11');
    // update-alternatives' way: a new link renamed over the old one (the directory's times change).
    symlinkSync('/usr/bin/python3.12', join(source, 'alternatives', 'python.new'));
    renameSync(join(source, 'alternatives', 'python.new'), join(source, 'alternatives', 'python'));
    const second = copies.acquire(11_000);
    expect(second?.dir).not.toBe(first?.dir);
    expect(readlinkSync(join(second?.dir as string, 'alternatives', 'python'))).toBe('/usr/bin/python3.12');
    copies.dispose();
  });

  it('keeps an old copy while a sandbox still uses it, and removes it on the last release', () => {
    const { source, base } = fakeEtc();
    const copies = new EtcCopies(source, ENTRIES, [], { base, checkMs: 0 });
    const old = copies.acquire();
    const unused = copies.acquire();
    unused?.release();
    unused?.release(); // twice: counted once
    writeFileSync(join(source, 'hosts'), 'changed\n');
    const next = copies.acquire();
    expect(next?.dir).not.toBe(old?.dir);
    expect(readFileSync(join(old?.dir as string, 'hosts'), 'utf8')).toBe('127.0.0.1 localhost\n');
    old?.release();
    expect(existsSync(old?.dir as string)).toBe(false);
    // The current copy stays when its last user is gone: the next sandbox takes it.
    next?.release();
    expect(existsSync(next?.dir as string)).toBe(true);
    copies.dispose();
  });

  it('makes the copy again when a cleaner removed it', () => {
    const { source, base } = fakeEtc();
    const copies = new EtcCopies(source, ENTRIES, [], { base, checkMs: 0 });
    const first = copies.acquire();
    first?.release();
    rmSync(first?.dir as string, { recursive: true });
    const again = copies.acquire();
    expect(readFileSync(join(again?.dir as string, 'hosts'), 'utf8')).toBe('127.0.0.1 localhost\n');
    copies.dispose();
  });

  // Attack round 16: a cleaner sweeps the temporary dir and another user makes the root's name
  // again (world-writable) with a planted copy: no sandbox may bind it, nor the server write there.
  it('never uses a root made again by its name after a sweep: a fresh one instead', () => {
    const { source, base } = fakeEtc();
    const copies = new EtcCopies(source, ENTRIES, [], { base, checkMs: 60_000 });
    const first = copies.acquire(10_000);
    const root = join(first?.dir as string, '..');
    rmSync(root, { recursive: true });
    mkdirSync(first?.dir as string, { recursive: true });
    chmodSync(root, 0o777);
    writeFileSync(join(first?.dir as string, 'hosts'), 'planted\n');
    const again = copies.acquire(10_001); // within the check interval: the root is checked anyway
    expect(join(again?.dir as string, '..')).not.toBe(root);
    expect(readFileSync(join(again?.dir as string, 'hosts'), 'utf8')).toBe('127.0.0.1 localhost\n');
    first?.release();
    copies.dispose();
    expect(readdirSync(root)).toEqual([relative(root, first?.dir as string)]); // left alone
  });

  it("removes the copies of servers that died without their exit handler, and no one else's", () => {
    const { source, base } = fakeEtc();
    const dead = spawnSync('true').pid;
    for (const name of [`codexec-etc-${dead}-a`, `codexec-etc-${process.ppid}-b`, 'codexec-etc-x-c', 'other'])
      mkdirSync(join(base, name));
    const copies = new EtcCopies(source, ENTRIES, [], { base });
    const lease = copies.acquire();
    expect(readdirSync(base).sort()).toEqual(
      [
        `codexec-etc-${process.ppid}-b`,
        'codexec-etc-x-c',
        'other',
        relative(base, join(lease?.dir as string, '..')),
      ].sort(),
    );
    copies.dispose();
  });

  it('gives no copy when none can be made (the backend then binds each entry)', () => {
    const { source } = fakeEtc();
    const copies = new EtcCopies(source, ENTRIES, [], { base: join(source, 'no', 'such', 'dir') });
    expect(copies.acquire()).toBeUndefined();
  });
});
