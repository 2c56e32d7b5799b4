// What a sandboxed process printed and how it ended, for tests that spawn a backend's process.
import type { Exit, SandboxedProcess } from '../../src/sandbox/index.js';

export interface Output {
  readonly exit: Exit;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Everything `proc` printed, and its exit; then it is disposed. The exit can be known before the
 * last output is read (a launcher reports it on its own channel; a loaded machine reads the pipe
 * late): the streams' end says all of it is in, as the engine's drain waits for.
 */
export async function output(proc: SandboxedProcess): Promise<Output> {
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  proc.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const ended = (stream: NodeJS.ReadableStream) => new Promise((resolve) => stream.once('end', resolve));
  const [exit] = await Promise.all([proc.exited, ended(proc.stdout), ended(proc.stderr)]);
  await proc.dispose();
  return { exit, stdout, stderr };
}
