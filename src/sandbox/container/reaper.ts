// No container outlives its server. While it runs, a watcher (../host/watcher.ts) holds the names of
// its containers and, when the server is gone, however it went, removes every one still listed. A
// server that starts removes what dead servers left (their `codexec.pid` is gone, or is another
// process now).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { promisify } from 'node:util';
import { log } from '../../util/index.js';
import { Watcher } from '../host/index.js';
import type { ContainerEngine } from './engine.js';

const run = promisify(execFile);

/** After the watcher's list: remove every container still listed, again for a while. */
const REMOVE_ALL = `# A container still being created when the server died appears only later (its engine CLI goes
# on): ask again, a few times.
for round in 1 2 3 4 5; do
  [ \${#names[@]} -gt 0 ] || break
  "$@" "\${!names[@]}" >/dev/null 2>&1
  sleep 1
done`;

/** The engine's command that removes running containers at once (pid 1 may ignore SIGTERM). */
export function removeArgv(engine: ContainerEngine): string[] {
  return [
    engine.binary,
    ...engine.global,
    'rm',
    '--force',
    ...(engine.name === 'podman' ? ['--time', '0', '--ignore'] : []),
  ];
}

/** Removes this server's containers when it is gone (their names: watch / release). */
export function containerReaper(engine: ContainerEngine): Watcher {
  return new Watcher({
    script: REMOVE_ALL,
    args: removeArgv(engine),
    what: 'container reaper',
    env: process.env,
    detached: true,
  });
}

/** This process's start time (clock ticks since boot): with the pid, it names this server. */
export function processStart(pid: number | 'self' = 'self'): string | undefined {
  try {
    // Field 22, counted after the command name's closing parenthesis (the name may hold spaces).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** Remove the containers of this host's servers that are gone. Returns how many were removed. */
export async function sweepDeadServers(engine: ContainerEngine): Promise<number> {
  const cli = [...engine.global];
  try {
    const { stdout: names } = await run(engine.binary, [
      ...cli,
      'ps',
      '--all',
      '--filter',
      `label=codexec.host=${hostname()}`,
      '--format',
      '{{.Names}}',
    ]);
    const all = names.split('\n').filter(Boolean);
    if (all.length === 0) return 0;
    const format =
      '{{.Name}}\t{{index .Config.Labels "codexec.pid"}}\t{{index .Config.Labels "codexec.started"}}';
    // Other servers' containers come and go meanwhile: the engine then fails the call for those
    // names, and still prints the others.
    const stdout = await run(engine.binary, [...cli, 'inspect', '--format', format, ...all]).then(
      (done) => done.stdout,
      (error: { stdout?: string }) => error.stdout ?? '',
    );
    const dead = stdout
      .split('\n')
      .map((line) => line.split('\t'))
      .filter(([name, pid, started]) => name && (!pid || processStart(Number(pid)) !== started))
      .map(([name]) => (name ?? '').replace(/^\//, ''));
    if (dead.length === 0) return 0;
    const [binary = engine.binary, ...args] = removeArgv(engine);
    await run(binary, [...args, ...dead]);
    return dead.length;
  } catch (error) {
    log('warn', `could not remove the containers of stopped servers: ${(error as Error).message}`);
    return 0;
  }
}

/**
 * A used container waits this long after the last one came (the run's result on its way), then is
 * removed with those waiting beside it.
 */
const REMOVE_AFTER_MS = 50;
/** This many waiting: removed at once. */
const REMOVE_BATCH = 4;

/**
 * Containers to remove in small batches, one engine call at a time, just after the runs that used
 * them: a container's teardown costs ~0.1 s of CPU (the engine's CLI and cleanup), which must not
 * land on a run. Waiting for the server to be idle saved little (the engine's cleanup is per
 * container) and, under steady load, made 24 teardowns at once: a second or more of both CPUs
 * taken every few seconds, when runs waited and the warm pool could not refill (paced 250 ms
 * apart, a run in 25–30 waited 0.7–1.2 s). Used for warm runs' containers, stopped once their
 * program is over (container_init.sh).
 */
export class DeferredRemoval {
  private readonly names = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private removing: Promise<void> = Promise.resolve();

  constructor(
    private readonly engine: ContainerEngine,
    private readonly onRemoved: (name: string) => void,
  ) {}

  add(name: string): void {
    this.names.add(name);
    clearTimeout(this.timer);
    if (this.names.size >= REMOVE_BATCH) {
      void this.flush();
      return;
    }
    this.timer = setTimeout(() => void this.flush(), REMOVE_AFTER_MS);
    this.timer.unref();
  }

  /** Remove every container waiting now; resolves once the engine is done with them. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    const names = [...this.names];
    this.names.clear();
    if (names.length > 0) {
      const [binary = this.engine.binary, ...args] = removeArgv(this.engine);
      this.removing = this.removing
        .then(() =>
          run(binary, [...args, ...names]).then(
            () => undefined,
            () => undefined,
          ),
        )
        .then(() => {
          for (const name of names) this.onRemoved(name);
        });
    }
    return this.removing;
  }
}
