// A warm driver's start: one sandboxed interpreter in a fresh workspace, blocked on its control
// channel until a run takes it, with code mode's channel and the egress lane bound ahead.
import { closeSync, mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type Channel, CODE_MODE_FILES, channelEnv, NODE_IMPORT, openChannel } from '../codemode/index.js';
import type { Lane } from '../egress/index.js';
import { WarmProcess } from '../pool/index.js';
import { type InterpreterKind, RUNTIMES } from '../runtimes/index.js';
import { LOCAL_PRINCIPAL, newId } from '../util/index.js';
import { driverPath, openScriptFile, WARM_DRIVERS } from './drivers.js';
import type { Companions, RunHost } from './run.js';
import { openSandboxLane } from './sandbox-spec.js';
import { buildRunSpec } from './spec.js';

/** How long a warm start may wait for a driver to fork before it starts one cold. */
const FORK_WAIT_MS = 1000;
/** As long for a pre-forked launcher: a direct start waits for its cgroup move all the same. */
export const LAUNCHER_WAIT_MS = 1000;

/** Start one sandboxed interpreter in a fresh workspace, blocked on its control channel. */
export async function startWarm(
  host: RunHost,
  kind: InterpreterKind,
  zygote: 'prefer' | 'only' = 'prefer',
): Promise<WarmProcess> {
  const { config } = host.deps;
  const [backend, interpreter] = await Promise.all([
    host.deps.backends.get(),
    host.deps.interpreters.get(kind),
  ]);
  const id = newId('exec');
  const execDir = join(config.sandboxDir, id);
  mkdirSync(execDir, { recursive: true, mode: 0o700 });
  const driver = driverPath(WARM_DRIVERS[kind].file);
  // Code mode: the helpers are defined as the driver warms up and connect on first use; the
  // channel is bound now, off any run's path, and attached to the run that takes the process.
  const channel = host.deps.codeMode && kind !== 'bash' ? await openChannel(execDir) : undefined;
  // The egress allowlist: the lane waits with nobody's rules (all refused) until a run takes it.
  const opened =
    config.network === 'allowlist'
      ? await openSandboxLane(host.laneOf(backend, execDir)).catch(async (error: unknown) => {
          await channel?.close();
          await rm(execDir, { recursive: true, force: true });
          throw error;
        })
      : undefined;
  const spec = await buildRunSpec({
    config,
    principal: LOCAL_PRINCIPAL,
    hostEnv: host.hostEnv,
    kind,
    runtimeEnv: {
      ...(kind === 'python' ? RUNTIMES.python.env : {}),
      ...channelEnv(channel),
      ...opened?.env,
    },
    egress: opened?.endpoint,
    argv: channel && kind === 'node' ? [interpreter, ...NODE_IMPORT, driver] : [interpreter, driver],
    execDir,
    cwd: execDir,
    files: [driver, ...WARM_DRIVERS[kind].imports.map(driverPath), ...(channel ? CODE_MODE_FILES : [])],
    timeoutMs: config.maxTimeoutMs,
    control: true,
    capabilities: backend.capabilities,
    mounts: host.deps.mounts,
  });
  // Forked where this backend forks this interpreter's driver (else a launcher is waited for).
  const forks = WARM_DRIVERS[kind].forkable && backend.forksDrivers?.(kind) === true;
  const launch = forks && !opened ? { ...spec, zygote } : spec;
  const script = openScriptFile(execDir, kind);
  try {
    // Under load every ready fork can be taken: waiting for the next costs less than a cold start.
    if (launch.zygote) await backend.reserveFork?.(launch, FORK_WAIT_MS);
    else await backend.reserveLauncher?.(launch, LAUNCHER_WAIT_MS);
    const held = channel || opened ? new Held(channel, opened?.lane) : undefined;
    return new WarmProcess(id, execDir, backend.spawn(launch), script, held);
  } catch (error) {
    closeSync(script.fd);
    await Promise.all([channel?.close(), opened?.lane.close()]);
    await rm(execDir, { recursive: true, force: true });
    throw error;
  }
}

/** What a warm process holds beside its sandbox: code mode's channel, the egress lane. */
class Held implements Companions {
  constructor(
    readonly channel: Channel | undefined,
    readonly lane: Lane | undefined,
  ) {}

  async close(): Promise<void> {
    await Promise.all([this.channel?.close(), this.lane?.close()]);
  }
}
