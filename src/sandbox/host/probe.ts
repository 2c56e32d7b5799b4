// The probe every namespace or landlock backend runs before its first run: `true` in a real
// sandbox, as a one-shot run, since only a run proves that the layers found work together.
import type { Availability, SandboxBackend } from '../types.js';
import { findOnPath } from './system.js';

/** The probe run's end mark (SandboxSpec.endMark: END_MARK_BYTES). */
const PROBE_MARK = '\n[codexec-end probe00000000000]\n';

export async function probeRun(backend: Pick<SandboxBackend, 'spawn'>, root: boolean): Promise<Availability> {
  const truePath = findOnPath('true') ?? '/bin/true';
  const proc = backend.spawn({
    argv: [truePath],
    cwd: '/',
    env: { PATH: '/usr/bin:/bin' },
    writablePaths: [],
    readablePaths: [],
    limits: { memoryMb: 64, maxProcs: 16, maxFileMb: 1 },
    network: 'none',
    stdin: 'ignore',
    // As a one-shot run: its end reported where it can be, which this proves too.
    endMark: PROBE_MARK,
  });
  let stderr = '';
  proc.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  proc.stdout.resume();
  const exit = await proc.exited;
  await proc.dispose();
  if (exit.code === 0) return { available: true };
  const said = stderr.replace(PROBE_MARK, '').trim();
  const why = exit.spawnError?.message ?? (said || `exit ${exit.code ?? exit.signal}`);
  return {
    available: false,
    reason:
      `bubblewrap could not start a sandbox here (${why}); ` +
      (root
        ? 'as root it needs CAP_SYS_ADMIN (a container started without it cannot nest namespaces)'
        : 'user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1) or the container forbids them'),
  };
}
