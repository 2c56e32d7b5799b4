import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Where a container engine that starts containers runs: podman's conmon writes an empty `oom` file
// into the directory it inherits when the kernel kills a container for memory, and that must not
// be the operator's (`codexec serve` started in a project folder would gain a stray `oom`).

let dir: string | undefined;

/** A private directory (0700, made once, removed when the server exits) to start engines in. */
export function engineCwd(): string {
  if (dir === undefined) {
    const made = mkdtempSync(join(tmpdir(), 'codexec-engine-'));
    process.once('exit', () => rmSync(made, { recursive: true, force: true }));
    dir = made;
  }
  return dir;
}
