// The directory a landlock-mode server writes its confine launcher into: removed at exit, and
// when the server is killed (no exit hook runs), by the next server, never while its own runs.
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { landlockAbi } from '../../src/sandbox/landlock/index.js';
import { pidNamespace, sweepStale } from '../../src/sandbox/landlock/launcher-dir.js';
import { eventually } from '../helpers/eventually.js';
import { IS_ROOT } from '../helpers/mode.js';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

/** The launcher directories in temporary directory `dir` of server `pid`. */
const dirsIn = (dir: string, pid: number) =>
  readdirSync(dir).filter((name) => new RegExp(`^codexec-confine-\\d+\\.${pid}\\.\\d+-`).test(name));

/** Process `pid`'s state and start time, or undefined once it is gone. */
function stat(pid: number): { state: string; start: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state = '', , , , , , , , , , , , , , , , , , , start = ''] = text
      .slice(text.lastIndexOf(')') + 2)
      .split(' ');
    return { state, start };
  } catch {
    return undefined;
  }
}

describe('sweeping the launcher directories of servers gone', () => {
  const parent = tempDir('codexec-launcher-dirs-');
  afterAll(() => rmSync(parent, { recursive: true, force: true }));

  it('removes one whose owner is gone, and none of a live owner, another namespace or form', async () => {
    const namespace = pidNamespace() as string;
    expect(namespace).toMatch(/^\d+$/);
    // A process that has exited: its pid names no process now (or another one, started later).
    const gone = spawn('true');
    const pid = gone.pid as number;
    await new Promise((resolve) => gone.once('exit', resolve));
    const dead = `codexec-confine-${namespace}.${pid}.1-AAAAAA`;
    const live = `codexec-confine-${namespace}.${process.pid}.${stat(process.pid)?.start}-BBBBBB`;
    // This very pid, but a start time it does not have: a process before it held the pid.
    const reused = `codexec-confine-${namespace}.${process.pid}.1-CCCCCC`;
    const elsewhere = `codexec-confine-1.${pid}.1-DDDDDD`;
    const unnamed = 'codexec-confine-EEEEEE';
    for (const name of [dead, live, reused, elsewhere, unnamed]) mkdirSync(join(parent, name));
    expect(sweepStale(parent, namespace).sort()).toEqual([join(parent, dead), join(parent, reused)].sort());
    expect(readdirSync(parent).sort()).toEqual([elsewhere, live, unnamed].sort());
  });

  it.runIf(IS_ROOT)('leaves another user’s alone', () => {
    const namespace = pidNamespace() as string;
    const theirs = `codexec-confine-${namespace}.999999999.1-FFFFFF`;
    mkdirSync(join(parent, theirs));
    chownSync(join(parent, theirs), 65534, 65534);
    expect(sweepStale(parent, namespace)).toEqual([]);
    expect(existsSync(join(parent, theirs))).toBe(true);
  });
});

describe.runIf(landlockAbi() >= 1)('a landlock-mode server killed with SIGKILL', () => {
  const servers: TestServer[] = [];
  // These servers' own TMPDIR: landlock servers of other test files, sweeping the host's, would
  // remove the killed one's directory before this test looks for it.
  const tmp = tempDir('codexec-launcher-tmp-');
  chmodSync(tmp, 0o1777);
  const dirsOf = (pid: number) => dirsIn(tmp, pid);
  afterAll(async () => {
    for (const server of servers) await server.close().catch(() => {});
    rmSync(tmp, { recursive: true, force: true });
  });

  const landlockServer = async () => {
    const server = await startServer({ env: { CODEXEC_SANDBOX_MODE: 'landlock', TMPDIR: tmp } });
    servers.push(server);
    const { value } = await callTool(server.client, 'execute_code', { language: 'bash', code: 'echo ok' });
    expect(value).toMatchObject({ success: true, stdout: 'ok\n', sandbox_mode: 'landlock' });
    expect(dirsOf(server.pid)).toHaveLength(1);
    return server;
  };

  it('leaves its launcher directory to the next server, which keeps those of servers still running', async () => {
    const killed = await landlockServer();
    const running = await landlockServer();
    const [stale] = dirsOf(killed.pid);
    process.kill(killed.pid, 'SIGKILL');
    expect(await eventually(() => [undefined, 'Z'].includes(stat(killed.pid)?.state))).toBe(true);
    expect(existsSync(join(tmp, stale as string))).toBe(true);
    const next = await landlockServer();
    expect(existsSync(join(tmp, stale as string))).toBe(false);
    expect(dirsOf(running.pid)).toHaveLength(1);
    // A server that exits removes its own.
    await running.close();
    expect(await eventually(() => dirsOf(running.pid).length === 0)).toBe(true);
    expect(dirsOf(next.pid)).toHaveLength(1);
  });
});
