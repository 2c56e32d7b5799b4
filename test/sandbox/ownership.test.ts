import {
  chownSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { identityFor, Lease, NOBODY } from '../../src/sandbox/host/ownership.js';
import { allowing } from '../helpers/host-dir.js';
import { SANDBOX_ENV } from '../helpers/mode.js';
import { callTool, startServer } from '../helpers/server.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
function dir(): string {
  const path = mkdtempSync(join(tmpdir(), 'codexec-own-'));
  dirs.push(path);
  return path;
}

describe.runIf(process.getuid?.() === 0)('ownership when the server is root', () => {
  it("runs as the spec's runAs (a host directory's owner, found by policy), else as nobody", () => {
    expect(identityFor({})).toEqual(NOBODY);
    expect(identityFor({ runAs: { uid: 1000, gid: 1000 } })).toEqual({ uid: 1000, gid: 1000 });
  });

  it('never lends the host directory, whoever owns what in it', async () => {
    const own = dir();
    const host = dir();
    writeFileSync(join(host, 'tool'), 'root-owned');
    const lease = new Lease(NOBODY);
    lease.lend({ writablePaths: [own, host], hostDir: host });
    expect(statSync(own).uid).toBe(65534);
    expect(statSync(host).uid).toBe(0);
    expect(statSync(join(host, 'tool')).uid).toBe(0);
    await lease.giveBack();
    expect(statSync(own).uid).toBe(0);
  });

  it('lends root-owned entries, skips hard links and symlink targets, gives everything back', async () => {
    const root = dir();
    const outside = dir();
    writeFileSync(join(root, 'data.csv'), 'a,b');
    mkdirSync(join(root, 'sub'));
    writeFileSync(join(outside, 'secret'), 'x');
    linkSync(join(outside, 'secret'), join(root, 'hardlink'));
    symlinkSync(join(outside, 'secret'), join(root, 'symlink'));
    const lease = new Lease(NOBODY);
    lease.lend({ writablePaths: [root] });
    expect(statSync(root).uid).toBe(65534);
    expect(statSync(join(root, 'data.csv')).uid).toBe(65534);
    expect(statSync(join(root, 'sub')).uid).toBe(65534);
    expect(statSync(join(outside, 'secret')).uid).toBe(0); // neither through the hard link nor the symlink
    // What the run would leave: a new file, owned by the sandbox uid.
    writeFileSync(join(root, 'sub', 'new.txt'), 'made');
    chownSync(join(root, 'sub', 'new.txt'), 65534, 65534);
    await lease.giveBack();
    for (const name of ['.', 'data.csv', 'sub', 'sub/new.txt'])
      expect(statSync(join(root, name)).uid).toBe(0);
  });

  it('shares a tree two runs of one uid hold at once: the last to end gives it back', async () => {
    const root = dir();
    writeFileSync(join(root, 'first.py'), 'made before both');
    const first = new Lease(NOBODY);
    first.lend({ writablePaths: [root] });
    writeFileSync(join(root, 'second.py'), 'the server writes the second run its file');
    const second = new Lease(NOBODY);
    second.lend({ writablePaths: [root] });
    expect(statSync(join(root, 'second.py')).uid).toBe(65534);
    // The second run ends first: the first one still runs in the tree, as its user.
    await second.giveBack();
    for (const name of ['.', 'first.py', 'second.py']) expect(statSync(join(root, name)).uid).toBe(65534);
    await first.giveBack();
    for (const name of ['.', 'first.py', 'second.py']) expect(statSync(join(root, name)).uid).toBe(0);
    // Lent again from scratch afterwards.
    const third = new Lease(NOBODY);
    third.lend({ writablePaths: [root] });
    expect(statSync(root).uid).toBe(65534);
    await third.giveBack();
    expect(statSync(root).uid).toBe(0);
  });

  it('says whether the give-back was whole: returned, or kept where a tree was too deep to walk', async () => {
    const said: string[] = [];
    const identity = {
      uid: 0x7000_0005,
      gid: 0x7000_0000,
      returned: () => said.push('returned'),
      kept: () => said.push('kept'),
    };
    for (const depth of [3, 70]) {
      const root = dir();
      const lease = new Lease(identity);
      lease.lend({ writablePaths: [root] });
      // What the run leaves: a chain of directories, each its uid's.
      let path = root;
      for (let level = 0; level < depth; level++) {
        path = join(path, 'd');
        mkdirSync(path);
        chownSync(path, identity.uid, identity.gid);
      }
      await lease.giveBack();
      expect(statSync(join(root, 'd')).uid).toBe(0);
    }
    expect(said).toEqual(['returned', 'kept']);
  });

  it('keeps the command workspace its own for a command while another one there ends', async () => {
    const server = await startServer({ env: { ...SANDBOX_ENV, CODEXEC_MAX_CONCURRENT_RUNS: '4' } });
    const command = (line: string) =>
      callTool<{ success: boolean; stdout: string; stderr: string; work_dir: string }>(
        server.client,
        'execute_command',
        { command: line, timeout: 30 },
      );
    const wait = (file: string) => `while [ ! -e ${file} ]; do sleep 0.05; done`;
    try {
      const made = await command('echo data > kept.txt');
      expect(made.value.success).toBe(true);
      // The first command to take the workspace ends first, while the second one still runs there.
      const first = command(`touch first; ${wait('second')}`);
      await expect.poll(() => existsSync(join(made.value.work_dir, 'first')), { timeout: 20_000 }).toBe(true);
      const second = command(
        `touch second; ${wait('first-ended')}; cat kept.txt; echo more >> kept.txt && echo wrote`,
      );
      expect((await first).value.success).toBe(true);
      writeFileSync(join(made.value.work_dir, 'first-ended'), '');
      const { value } = await second;
      expect(value, value.stderr).toMatchObject({ success: true, stdout: 'data\nwrote\n' });
    } finally {
      await server.close();
    }
  });

  it("a regular user's working_dir runs the code as that user, outputs theirs", async () => {
    const work = dir();
    chownSync(work, 1000, 1000);
    const server = await startServer({ env: { ...SANDBOX_ENV, ...allowing(work) } });
    try {
      const { value } = await callTool(server.client, 'execute_code', {
        language: 'bash',
        code: 'id -u; echo made > out.txt',
        working_dir: work,
      });
      expect(value).toMatchObject({ success: true, stdout: '1000\n' });
      expect(statSync(join(work, 'out.txt')).uid).toBe(1000);
    } finally {
      await server.close();
    }
  });
});
