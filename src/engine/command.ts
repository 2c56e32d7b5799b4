import type { SandboxBackend, SandboxSpec } from '../sandbox/index.js';
import { drain, terminate } from './kill.js';
import { OutputCollector, type OutputLimits } from './output.js';

export interface CommandOptions {
  readonly timeoutMs: number;
  readonly killGraceMs: number;
  readonly output: OutputLimits;
}

export interface CommandResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly truncated: boolean;
  readonly exit_code: number | null;
  readonly timed_out: boolean;
  readonly spawn_error?: string;
}

/**
 * Run one trusted command (an installer, a probe) through a backend with the same guarantees as
 * user code: bounded output, wall-clock timeout with the SIGTERM → SIGKILL cascade, and nothing
 * left running afterwards.
 */
export async function runCommand(
  backend: SandboxBackend,
  spec: SandboxSpec,
  options: CommandOptions,
): Promise<CommandResult> {
  const stdout = new OutputCollector(options.output);
  const stderr = new OutputCollector(options.output);
  const proc = backend.spawn(spec);
  proc.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
  proc.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  let timed_out = false;
  let stopping: Promise<void> | undefined;
  const timer = setTimeout(() => {
    timed_out = true;
    stopping = terminate(proc, options.killGraceMs);
  }, options.timeoutMs);
  try {
    const exit = await proc.exited;
    proc.kill('SIGKILL');
    await stopping;
    await drain(proc, 500);
    const out = stdout.finish();
    const err = stderr.finish();
    return {
      stdout: out.text,
      stderr: err.text,
      truncated: out.truncated || err.truncated,
      exit_code: timed_out ? null : exit.code,
      timed_out,
      ...(exit.spawnError && { spawn_error: exit.spawnError.message }),
    };
  } finally {
    clearTimeout(timer);
    await proc.dispose();
  }
}
