// A sandbox whose bwrap monitor died before the sandbox was built waits forever for it, outside
// every run cgroup (found after full test runs). The next namespace backend kills such
// orphans when it first sets up.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NamespaceBackend } from '../../src/sandbox/index.js';
import { processesWith, sleepMarker } from '../helpers/procs.js';

const root = process.getuid?.() === 0;

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/**
 * A sandbox's init whose monitor is gone (bwrap without --die-with-parent, monitor killed): its
 * marker once it is orphaned and still running, or undefined if it was gone before that — any
 * codexec server starting on this host meanwhile (another suite's) kills it, rightly.
 */
async function orphanedSandbox(): Promise<string | undefined> {
  const marker = sleepMarker();
  const monitor = spawn(
    'bwrap',
    [
      ...(root ? [] : ['--unshare-user']),
      '--unshare-pid',
      '--unshare-uts',
      '--hostname',
      'codexec',
      '--ro-bind',
      '/',
      '/',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      'sleep',
      marker,
    ],
    { stdio: 'ignore', detached: true },
  );
  // The monitor, the sandbox's init and sleep all have the marker in their argv.
  await expect.poll(() => processesWith(marker).length, { timeout: 5000 }).toBe(3);
  const init = processesWith(marker).find((pid) => parentOf(pid) === monitor.pid);
  expect(init).toBeDefined();
  process.kill(monitor.pid as number, 'SIGKILL');
  await expect
    .poll(
      () => {
        try {
          return parentOf(init as number);
        } catch {
          return undefined; // gone
        }
      },
      { timeout: 5000 },
    )
    .not.toBe(monitor.pid);
  return processesWith(marker).length === 2 ? marker : undefined;
}

describe('orphaned sandboxes', () => {
  it('are killed, with their namespace, when a namespace backend sets up', async () => {
    let marker: string | undefined;
    for (let tries = 0; tries < 5 && !marker; tries++) marker = await orphanedSandbox();
    expect(marker, 'in five tries every orphan was killed by another server first').toBeDefined();
    new NamespaceBackend().setup();
    await expect.poll(() => processesWith(marker as string), { timeout: 5000 }).toEqual([]);
  });
});
