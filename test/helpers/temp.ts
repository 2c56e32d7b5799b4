// Temporary directories for tests, removed after each test file (test/helpers/cleanup.ts, a setup
// file): a module of its own, so the setup file every test file runs loads nothing else.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The directories tempDir() made in this test file. */
const made: string[] = [];

export function tempDir(prefix = 'codexec-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

export function removeTempDirs(): void {
  for (const dir of made.splice(0)) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // a file a sandbox user keeps (an ordinary user's pass): left to the system's /tmp cleaning
    }
  }
}
