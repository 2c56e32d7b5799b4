// Temporary directories for tests, removed after each test file (test/helpers/cleanup.ts, a setup
// file): a module of its own, so the setup file every test file runs loads nothing else.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The directories tempDir() made in this test file. */
const made: string[] = [];

export function tempDir(prefix = 'codexec-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** A temporary directory holding `files` (relative path → content), their directories made. */
export function fileTree(files: Readonly<Record<string, string>>): string {
  const root = tempDir();
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
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
