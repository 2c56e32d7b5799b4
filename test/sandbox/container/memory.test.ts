// What a waiting container counts against the warm pool's budget: its memory cgroup's charge and
// its engine CLI's anonymous memory (src/sandbox/container/memory.ts).
import { describe, expect, it } from 'vitest';
import { containerMemoryMb } from '../../../src/sandbox/container/memory.js';
import { fileTree } from '../../helpers/temp.js';

const MIB = 1024 * 1024;

describe('containerMemoryMb', () => {
  it('adds the cgroup v1 charge and the CLI process anonymous memory', () => {
    const root = fileTree({ 'memory/libpod_parent/libpod-1/memory.usage_in_bytes': String(5 * MIB) });
    const header = '4:memory:/libpod_parent/libpod-1;2:cpuacct:/libpod_parent/libpod-1';
    expect(containerMemoryMb(undefined, header, root)).toBe(5);
    // This test's own process stands for the CLI: its anonymous memory is more than nothing.
    expect(containerMemoryMb(process.pid, header, root)).toBeGreaterThan(5);
  });

  it('reads cgroup v2 memory.current', () => {
    const root = fileTree({ 'machine/libpod-2/memory.current': String(3 * MIB) });
    expect(containerMemoryMb(undefined, '0::/machine/libpod-2', root)).toBe(3);
  });

  it('knows nothing before the driver has told its cgroups, or where they cannot be read', () => {
    const root = fileTree({});
    expect(containerMemoryMb(process.pid, undefined, root)).toBeUndefined();
    expect(containerMemoryMb(process.pid, '4:memory:/libpod_parent/gone', root)).toBeUndefined();
    expect(containerMemoryMb(process.pid, '4:memory:/../../etc', root)).toBeUndefined();
  });
});
