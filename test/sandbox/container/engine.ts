// The container engine the docker-mode tests drive (podman here and in CI; docker where its daemon
// runs) and the image they use, built from the host when missing.
import { execFileSync, spawnSync } from 'node:child_process';
import { CLI } from '../../helpers/server.js';

export const IMAGE = process.env.CODEXEC_TEST_IMAGE ?? 'codexec-sandbox';
const ENGINE = process.env.CODEXEC_CONTAINER_ENGINE === 'docker' ? 'docker' : 'podman';

/** Run the engine's CLI; its stdout. */
export function engine(...args: string[]): string {
  return execFileSync(ENGINE, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Build the image from the host if it is not there, and start one container (the engine's first start is slow). */
export function ensureImage(): void {
  if (spawnSync(ENGINE, ['image', 'exists', IMAGE]).status !== 0) {
    execFileSync(process.execPath, [CLI, 'image', 'build', '--from-host', '--tag', IMAGE], {
      stdio: 'inherit',
    });
  }
}

/** Names of the containers a server (by its pid) made that still exist. */
export function containersOf(pid: number): string[] {
  return engine('ps', '--all', '--filter', `label=codexec.pid=${pid}`, '--format', '{{.Names}}')
    .split('\n')
    .filter(Boolean);
}

/** Containers of a server's sessions (those running a session driver, not a warm one). */
export function sessionContainersOf(pid: number): string[] {
  return engine(
    'ps',
    '--filter',
    `label=codexec.pid=${pid}`,
    '--no-trunc',
    '--format',
    '{{.Names}} {{.Command}}',
  )
    .split('\n')
    .filter((line) => /\/(python|node|bash)_driver\./.test(line));
}

/** Names of the containers a server created since `since` (the engine's event log). */
export function createdSince(pid: number, since: Date): string[] {
  return engine(
    'events',
    '--since',
    String(Math.floor(since.getTime() / 1000)),
    '--until',
    String(Math.ceil(Date.now() / 1000)),
    '--filter',
    'event=create',
    '--filter',
    `label=codexec.pid=${pid}`,
    '--format',
    '{{.Name}}',
  )
    .split('\n')
    .filter(Boolean);
}

/** Poll until `check` holds, at most `ms`. */
export async function eventually(check: () => boolean, ms = 15_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return check();
}
