// Which limit stopped a container's program (src/sandbox/container/limits.ts and process.ts): its
// cgroup counters while they can be read; the wrapper's note once they cannot, as when a loaded
// server reads a warm driver's report after the runtime has removed the container's cgroups.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { limitHit } from '../../../src/sandbox/container/limits.js';
import { wrap } from '../../../src/sandbox/container/process.js';
import { fileTree, tempDir } from '../../helpers/temp.js';

const HEADER = '8:pids:/libpod_parent/run-1;4:memory:/libpod_parent/run-1';
const counters = (refusals: number, ooms: number) => ({
  'pids/libpod_parent/run-1/pids.events': `max ${refusals}\n`,
  'memory/libpod_parent/run-1/memory.oom_control': `oom_kill_disable 0\nunder_oom 0\noom_kill ${ooms}\n`,
});

describe('limitHit', () => {
  it('names the first counter above zero, and none while all read zero', () => {
    expect(limitHit(HEADER, fileTree(counters(3, 0)))).toBe('processes');
    expect(limitHit(HEADER, fileTree(counters(3, 1)))).toBe('memory');
    expect(limitHit(HEADER, fileTree(counters(0, 0)))).toBeUndefined();
  });

  it('says null where a counter cannot be read: the cgroups are gone, or going one by one', () => {
    expect(limitHit(HEADER, fileTree({}))).toBeNull();
    const { 'pids/libpod_parent/run-1/pids.events': _pids, ...memoryOnly } = counters(0, 0);
    expect(limitHit(HEADER, fileTree(memoryOnly))).toBeNull();
    // A counter above zero is the answer whatever else is gone.
    expect(limitHit(HEADER, fileTree({ 'pids/libpod_parent/run-1/pids.events': 'max 2\n' }))).toBe(
      'processes',
    );
    expect(limitHit(undefined, fileTree({}))).toBeUndefined();
  });
});

describe('a container whose cgroups are gone', () => {
  /** A container's process as `wrap` sees it: a real child, its cgroups named in the wrapper's file. */
  function container(header: string) {
    const workspace = tempDir();
    const note = join(workspace, '.codexec_limit');
    writeFileSync(`${note}.cgroup`, `${header}\n`);
    const child = spawn('sleep', ['30'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const proc = wrap(
      {
        child,
        control: undefined,
        ownContainer: true,
        limitNote: note,
        insidePath: (path) => path,
        signal: (signal) => child.kill(signal),
        cleanUp: async () => {},
      },
      undefined,
    );
    return { proc, note };
  }

  it('is answered by the note its wrapper left, which the exit still takes', async () => {
    // Under /sys/fs/cgroup, where no such cgroup is: removed by the runtime.
    const gone = `8:pids:/codexec-test-gone-${process.pid};4:memory:/codexec-test-gone-${process.pid}`;
    const { proc, note } = container(gone);
    expect(proc.limitHit?.()).toBeUndefined(); // no note yet: nothing to name
    writeFileSync(note, 'processes\n');
    expect(proc.limitHit?.()).toBe('processes');
    expect(existsSync(note)).toBe(true); // read, not taken: the wrapper may still be writing it
    proc.kill('SIGKILL');
    expect(await proc.exited).toMatchObject({ signal: 'SIGKILL', limit: 'processes' });
    expect(existsSync(note)).toBe(false);
    await proc.dispose();
  });

  it('names no limit from a note while the counters can be read, and the note’s once they cannot', async () => {
    // A real pids cgroup (v1's controller where it is mounted, else v2's), its counter at zero.
    const v1 = existsSync('/sys/fs/cgroup/pids/pids.max') || existsSync('/sys/fs/cgroup/pids/cgroup.procs');
    const name = `codexec-test-limits-${process.pid}`;
    const dir = join('/sys/fs/cgroup', v1 ? 'pids' : '', name);
    mkdirSync(dir);
    try {
      const { proc, note } = container(v1 ? `8:pids:/${name}` : `0::/${name}`);
      writeFileSync(note, 'processes\n'); // as the program could write it in its workspace
      expect(proc.limitHit?.()).toBeUndefined();
      rmdirSync(dir); // the runtime removes the cgroup once the container's last process has ended
      expect(proc.limitHit?.()).toBe('processes');
      proc.kill('SIGKILL');
      await proc.exited;
      await proc.dispose();
    } finally {
      if (existsSync(dir)) rmdirSync(dir);
    }
  });
});
