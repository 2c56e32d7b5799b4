import { countCpu, type SandboxBackend, type SandboxSpec } from '../sandbox/index.js';
import { chargeCpu } from '../util/index.js';
import { type Collected, type CollectOptions, collect } from './collect.js';

export type CommandOptions = Pick<
  CollectOptions,
  'timeoutMs' | 'killGraceMs' | 'output' | 'secrets' | 'signal'
>;
export type CommandResult = Collected;

/**
 * Run one trusted command (an installer, a probe) through a backend with the same guarantees as
 * user code: bounded output, wall-clock timeout with the kill cascade, nothing left running.
 */
export async function runCommand(
  backend: SandboxBackend,
  spec: SandboxSpec,
  options: CommandOptions,
): Promise<CommandResult> {
  const proc = backend.spawn(spec);
  const used = countCpu(proc);
  try {
    return await collect(proc, options);
  } finally {
    // An install under a gated call is charged to its principal's day (CODEXEC_QUOTAS).
    chargeCpu(used());
    await proc.dispose();
  }
}
