// `codexec doctor` on the OCI runtime of sandbox mode docker (CODEXEC_DOCKER_RUNTIME): the one the
// engine (podman, as in CI) reports, and a runtime it does not know.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { baseEnv, CLI, tempDir } from '../helpers/server.js';

const home = tempDir('codexec-doctor-');
afterAll(() => rmSync(home, { recursive: true, force: true }));
const installed = (name: string) => spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;

/** doctor's lines of the container section, under this runtime setting. */
function doctor(runtime?: string): string[] {
  const env = {
    ...baseEnv(home),
    CODEXEC_CONTAINER_ENGINE: 'podman',
    ...(runtime && { CODEXEC_DOCKER_RUNTIME: runtime }),
  };
  const result = spawnSync(process.execPath, [CLI, 'doctor'], { env, encoding: 'utf8', timeout: 60_000 });
  expect(result.status).toBe(0);
  const lines = result.stdout.split('\n');
  const start = lines.findIndex((line) => line.startsWith('container sandbox'));
  return lines.slice(start, lines.indexOf('', start));
}

describe.skipIf(!installed('podman'))('doctor and the container runtime', () => {
  it.skipIf(!installed('runc'))('shows runc, podman’s default here, when none is set', () => {
    expect(doctor()).toContainEqual(
      expect.stringMatching(/^\s+OK\s+runtime\s+runc at \S+runc, runc version .*\(the engine's default/),
    );
  });

  it.skipIf(!installed('runsc'))('shows the runtime set, and the path podman resolves its name to', () => {
    expect(doctor('runsc')).toContainEqual(
      expect.stringMatching(
        /^\s+OK\s+runtime\s+runsc at \/\S+\/runsc, runsc version .*\(CODEXEC_DOCKER_RUNTIME=runsc\)$/,
      ),
    );
  });

  it('says the engine does not know a runtime, naming the setting', () => {
    const lines = doctor('codexec-no-such-runtime');
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^\s+missing\s+engine\s+.*podman \(runtime codexec-no-such-runtime, CODEXEC_DOCKER_RUNTIME\): .*"codexec-no-such-runtime" not found/,
      ),
    );
    expect(lines.some((line) => /^\s+OK/.test(line))).toBe(false);
  });
});
