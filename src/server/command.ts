import type { z } from 'zod';
import { CONNECTIONS } from '../egress/index.js';
import type { ExecutionRequest, ExecutionResult, RunOptions } from '../engine/index.js';
import { detectVenv, openCommandDir, type Venv } from '../policy/index.js';
import type { commandResultSchema } from '../results/index.js';
import type { HeldDir } from '../util/index.js';
import type { Services } from './services.js';

/** execute_command's request in the server's units (the tool turns seconds into ms). */
export interface CommandRequest {
  readonly command: string;
  readonly timeoutMs: number;
  readonly workDir?: string | undefined;
  /** The call's `allowed_domains` (egress allowlist). */
  readonly allowedDomains?: readonly string[] | undefined;
}

/** A command judged runnable: where it runs and with which venv. */
export interface PreparedCommand {
  readonly command: string;
  readonly timeoutMs: number;
  /** Held until the command ends: the caller closes it, whether the command ran or not. */
  readonly dir: HeldDir;
  readonly venv: Venv | undefined;
  readonly allowedDomains?: readonly string[] | undefined;
}

/** The result execute_command returns: its schema (results/), plus the proxy's connections (never sent). */
export type CommandResult = z.infer<ReturnType<typeof commandResultSchema>> & {
  [CONNECTIONS]?: ExecutionResult[typeof CONNECTIONS];
};

/**
 * Where a command runs, shared by the tool and `codexec run --command`: the directory (workspace
 * rules) and the venv. Throws the refusal. Whether the command may run at all is the gate's
 * (`checkCommand`: rules and lists), checked by each caller.
 */
export async function prepareCommand(services: Services, request: CommandRequest): Promise<PreparedCommand> {
  const dir = await openCommandDir(request.workDir, services.config, services.hostDirs);
  return {
    command: request.command,
    timeoutMs: request.timeoutMs,
    dir,
    venv: detectVenv(dir),
    allowedDomains: request.allowedDomains,
  };
}

/** Run a prepared command through the engine: `bash -c` in the sandbox, logged like every run. */
export async function runPreparedCommand(
  services: Services,
  prepared: PreparedCommand,
  options: RunOptions = {},
  askEgress?: ExecutionRequest['askEgress'],
): Promise<CommandResult> {
  const { venv } = prepared;
  const result = await services.engine.run(
    {
      language: 'bash',
      form: 'command',
      code: prepared.command,
      timeoutMs: prepared.timeoutMs,
      workingDir: prepared.dir,
      tool: 'execute_command',
      allowedDomains: prepared.allowedDomains,
      askEgress,
      ...(venv && { env: { VIRTUAL_ENV: venv.path }, pathPrefix: [venv.bin] }),
    },
    options,
  );
  return {
    success: result.success,
    exit_code: result.exit_code,
    stdout: result.stdout,
    stderr: result.stderr,
    execution_time: result.duration_ms / 1000,
    execution_id: result.execution_id,
    duration_ms: result.duration_ms,
    timed_out: result.timed_out,
    cancelled: result.cancelled,
    truncated: result.truncated,
    ...(result.output_saved && { output_saved: result.output_saved }),
    work_dir: result.working_dir,
    working_dir: result.working_dir,
    sandbox_mode: result.sandbox_mode,
    artifacts: result.artifacts,
    artifacts_deleted: result.artifacts_deleted,
    ...(result.artifacts_omitted && { artifacts_omitted: result.artifacts_omitted }),
    venv: venv?.path ?? null,
    ...(result.limit && { limit: result.limit }),
    ...(result.network_denied && { network_denied: result.network_denied }),
    ...(result[CONNECTIONS] && { [CONNECTIONS]: result[CONNECTIONS] }),
  };
}
