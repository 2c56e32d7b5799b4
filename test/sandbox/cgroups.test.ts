import { describe, expect, it } from 'vitest';
import { findCgroups } from '../../src/sandbox/host/cgroup-layout.js';
import { runsParentLayout, totalLimitWrites } from '../../src/sandbox/host/cgroup-parent.js';

const V1_MOUNTS = [
  '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
  '35 31 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
  '38 31 0:34 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
  '40 31 0:36 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
].join('\n');
const V1_SELF = ['8:pids:/', '4:memory:/jobs/abc', '0::/'].join('\n');

describe('findCgroups', () => {
  it('finds our memory and pids cgroups on v1 (hybrid hosts included)', () => {
    expect(findCgroups(V1_MOUNTS, V1_SELF)).toEqual({
      version: 1,
      memory: '/sys/fs/cgroup/memory/jobs/abc',
      pids: '/sys/fs/cgroup/pids',
    });
  });

  it('maps a container mount of a sub-tree (cgroup namespace root) onto the mount point', () => {
    const mounts =
      '35 31 0:31 /jobs /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n' +
      '38 31 0:34 /jobs /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids';
    expect(findCgroups(mounts, '4:memory:/jobs/abc\n8:pids:/jobs/abc')).toMatchObject({
      memory: '/sys/fs/cgroup/memory/abc',
      pids: '/sys/fs/cgroup/pids/abc',
    });
  });

  it('uses v2 when its controllers include memory and pids', () => {
    const mounts = '30 23 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate';
    const self = '0::/user.slice/user-1000.slice/session-2.scope';
    expect(findCgroups(mounts, self, () => 'cpuset cpu io memory pids')).toEqual({
      version: 2,
      memory: '/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope',
      pids: '/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope',
    });
    expect(findCgroups(mounts, self, () => 'cpu io')).toBeUndefined();
  });

  it('reports nothing when neither hierarchy is usable', () => {
    expect(findCgroups('', '')).toBeUndefined();
    expect(findCgroups(V1_MOUNTS.split('\n').slice(0, 2).join('\n'), V1_SELF)).toBeUndefined();
  });
});

describe('the parent of all runs (CODEXEC_TOTAL_*)', () => {
  const totals = { memoryMb: 300, maxProcs: 40 };

  it('on v1: one parent per hierarchy, memory+swap never below memory, pids.max', () => {
    const v1 = { version: 1, memory: '/sys/fs/cgroup/memory/jobs/abc', pids: '/sys/fs/cgroup/pids' } as const;
    const parent = runsParentLayout(v1, 42);
    expect(parent).toEqual({
      version: 1,
      memory: '/sys/fs/cgroup/memory/jobs/abc/codexec-runs-42',
      pids: '/sys/fs/cgroup/pids/codexec-runs-42',
    });
    const bytes = String(300 * 1024 * 1024);
    expect(totalLimitWrites(parent, totals)).toEqual([
      { file: `${parent.memory}/memory.memsw.limit_in_bytes`, value: bytes, optional: true },
      { file: `${parent.memory}/memory.limit_in_bytes`, value: bytes },
      { file: `${parent.memory}/memory.memsw.limit_in_bytes`, value: bytes, optional: true },
      { file: `${parent.pids}/pids.max`, value: '40' },
    ]);
  });

  it('on v2: one directory, the controllers delegated to the runs beneath, no swap', () => {
    const dir = '/sys/fs/cgroup/user.slice/session-2.scope';
    const parent = runsParentLayout({ version: 2, memory: dir, pids: dir }, 42);
    expect(parent.memory).toBe(`${dir}/codexec-runs-42`);
    expect(parent.pids).toBe(parent.memory);
    expect(totalLimitWrites(parent, totals)).toEqual([
      { file: `${parent.memory}/cgroup.subtree_control`, value: '+memory +pids' },
      { file: `${parent.memory}/memory.max`, value: String(300 * 1024 * 1024) },
      { file: `${parent.memory}/memory.swap.max`, value: '0', optional: true },
      { file: `${parent.memory}/pids.max`, value: '40' },
    ]);
  });
});
