import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { dropProgram, dropRuns, dropsTo } from '../../src/sandbox/namespace/drop.js';

// The drop program run on the host as the root server runs it in a sandbox (where bwrap has also
// applied seccomp and dropped the other capabilities). The backend's cold runs through it are
// compared with forked ones in zygote.test.ts and checked for uid 65534 in namespace.test.ts.
const dir = mkdtempSync(join(tmpdir(), 'codexec-drop-'));
chmodSync(dir, 0o755);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const program = dropProgram();
const path = join(dir, 'drop');
if (program) writeFileSync(path, program, { mode: 0o555 });

const STATUS = `import os, sys
fields = dict(line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\\t" in line)
print(sys.argv[1:], os.environ.get("MARK"))
for name in ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs"): print(name, fields[name].split())`;

/** Run `args` with fd 7 a socket that first carries `mark` (then ends); what came back on it. */
async function reportRun(mark: string | undefined, args: string[]) {
  const child = spawn(path, args, {
    stdio: ['ignore', 'pipe', 'pipe', 'ignore', 'ignore', 'ignore', 'ignore', 'pipe'],
  });
  const channel = (child.stdio as unknown as Duplex[])[7] as Duplex;
  if (mark === undefined) channel.end();
  else channel.write(mark);
  const read = (stream: NodeJS.ReadableStream) =>
    new Promise<string>((resolve) => {
      let text = '';
      stream.on('data', (chunk: Buffer) => {
        text += chunk.toString();
      });
      stream.on('end', () => resolve(text));
    });
  const [stdout, stderr, reported, code] = await Promise.all([
    read(child.stdout as NodeJS.ReadableStream),
    read(child.stderr as NodeJS.ReadableStream),
    read(channel),
    new Promise<number | null>((resolve) => child.once('exit', (status) => resolve(status))),
  ]);
  return { stdout, stderr, reported, code };
}

function drop(...args: string[]) {
  return spawnSync(path, args, { encoding: 'utf8', env: { MARK: 'kept' }, timeout: 10_000 });
}

describe('the drop program', () => {
  it('exists for x86-64 only (setpriv elsewhere), as a small static executable', () => {
    expect(dropProgram('arm64')).toBeUndefined();
    const x64 = dropProgram('x64');
    expect(x64?.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
    expect(x64?.length).toBeLessThan(1280);
  });

  it('is used only for ids it takes (1 to 999999999); setpriv drops to the others', () => {
    expect(dropsTo({ uid: 65534, gid: 65534 })).toBe(true);
    expect(dropsTo({ uid: 999_999_999, gid: 1 })).toBe(true);
    expect(dropsTo({ uid: 1_000_000_000, gid: 1000 })).toBe(false);
    expect(dropsTo({ uid: 1000, gid: 0 })).toBe(false);
  });

  // Its arguments are checked before it drops anything: by whoever runs it.
  describe.runIf(program !== undefined)('run by anyone', () => {
    it('refuses root, a non-number, more than 9 digits and a missing program, running nothing', () => {
      const marker = join(dir, 'ran');
      const touch = ['/bin/sh', '-c', `echo > ${marker}`];
      for (const args of [
        ['0', '65534', ...touch],
        ['65534', '0', ...touch],
        ['65534', '-1', ...touch],
        ['65534', '12a', ...touch],
        ['', '65534', ...touch],
        ['1234567890', '65534', ...touch],
        ['65534', '65534'],
        ['-r', '65534', '65534'],
        ['-r'],
        [],
      ]) {
        const ran = drop(...args);
        expect(ran.status).toBe(126);
        expect(ran.stderr).toBe('usage: drop [-r] UID GID PROGRAM [ARG]...\n');
      }
      expect(existsSync(marker)).toBe(false);
    });
  });

  describe.runIf(program !== undefined && process.getuid?.() === 0)('run by root', () => {
    it('drops to the uid and gid with no groups, every capability set empty and no_new_privs, then execs the program', () => {
      // Run by root with every capability, including inheritable ones (as bwrap leaves its kept ones).
      const ran = spawnSync(
        '/usr/bin/setpriv',
        [
          '--inh-caps=+setuid,+setgid,+dac_read_search',
          '--',
          path,
          '4242',
          '4343',
          '/usr/bin/python3',
          '-c',
          STATUS,
          'an arg',
          '',
        ],
        { encoding: 'utf8', env: { MARK: 'kept' }, timeout: 10_000 },
      );
      expect(ran.stderr).toBe('');
      expect(ran.status).toBe(0);
      expect(ran.stdout.split('\n')).toEqual([
        "['an arg', ''] kept",
        "Uid ['4242', '4242', '4242', '4242']",
        "Gid ['4343', '4343', '4343', '4343']",
        'Groups []',
        "CapInh ['0000000000000000']",
        "CapPrm ['0000000000000000']",
        "CapEff ['0000000000000000']",
        "CapBnd ['0000000000000000']",
        "CapAmb ['0000000000000000']",
        "NoNewPrivs ['1']",
        '',
      ]);
      expect(dropRuns(path)).toBe(true);
    });

    it('says why it could not start the program, with exit codes 127 (not found) and 126', () => {
      const missing = drop('65534', '65534', join(dir, 'missing'));
      expect(missing.status).toBe(127);
      expect(missing.stderr).toBe('codexec: could not start the program as the sandbox user: errno 2\n');
      const notExecutable = join(dir, 'data');
      writeFileSync(notExecutable, 'data', { mode: 0o644 });
      expect(drop('65534', '65534', notExecutable).stderr).toMatch(/errno 13\n$/);
      expect(drop('65534', '65534', notExecutable).status).toBe(126);
      // Run by a user that is not root, it cannot drop anything: setgroups fails with EPERM.
      const nested = drop('65534', '65534', path, '4242', '4242', '/bin/true');
      expect(nested.status).toBe(126);
      expect(nested.stderr).toBe('codexec: could not start the program as the sandbox user: errno 1\n');
    });

    it('with -r, reports the end: the mark after the output on stdout and stderr, the status on fd 7', async () => {
      const mark = '\n[codexec-end 0123456789abcdef]\n';
      const program = `import os, signal, sys
print("out", flush=True)
print("err", file=sys.stderr, flush=True)
status = dict(line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\\t" in line)
print(os.getppid() > 1, status["SigBlk"].strip(), status["SigIgn"].strip(), os.path.exists("/proc/self/fd/7"), flush=True)
os.kill(os.getppid(), signal.SIGTERM)  # held by the reporting process: it still reports
sys.exit(int(sys.argv[1]))`;
      const report = (...args: string[]) =>
        reportRun(mark, ['-r', '4242', '4343', '/usr/bin/python3', '-c', program, ...args]);
      const ran = await report('3');
      // Nothing blocked; ignored only what Python itself ignores (SIGPIPE, SIGXFSZ).
      expect(ran.stdout).toBe(`out\nTrue 0000000000000000 0000000001001000 False\n${mark}`);
      expect(ran.stderr).toBe(`err\n${mark}`);
      expect(ran.reported).toBe('3\n');
      expect(ran.code).toBe(3);
      // A program killed by signal N: 128+N, as bwrap reports it.
      const killed = await reportRun(mark, ['-r', '4242', '4343', '/bin/sh', '-c', 'kill -9 $$']);
      expect([killed.reported, killed.code, killed.stdout]).toEqual(['137\n', 137, mark]);
      // A program that cannot start: its process's message and 127, reported too.
      const missing = await reportRun(mark, ['-r', '4242', '4343', join(dir, 'missing')]);
      expect([missing.reported, missing.code]).toEqual(['127\n', 127]);
      expect(missing.stderr).toBe(
        `codexec: could not start the program as the sandbox user: errno 2\n${mark}`,
      );
      // No mark (the channel ends first): nothing runs.
      const marker = join(dir, 'ran-without-mark');
      const unmarked = await reportRun(undefined, [
        '-r',
        '4242',
        '4343',
        '/bin/sh',
        '-c',
        `echo > ${marker}`,
      ]);
      expect([unmarked.code, unmarked.reported, existsSync(marker)]).toEqual([126, '', false]);
      expect(unmarked.stderr).toBe('codexec: could not start the program as the sandbox user: errno 5\n');
    });

    it('is not used where it cannot run (a noexec dir, a file without exec permission)', () => {
      const copy = join(dir, 'not-executable');
      writeFileSync(copy, program as Buffer, { mode: 0o444 });
      expect(dropRuns(copy)).toBe(false);
    });
  });
});
