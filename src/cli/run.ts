import { readFile } from 'node:fs/promises';
import { extname, isAbsolute } from 'node:path';
import { text } from 'node:stream/consumers';
import type { Config } from '../config/index.js';
import { CodexecError, CommandBlockedError } from '../errors/index.js';
import { checkCommand, loadShellParser } from '../policy/index.js';
import type { Language } from '../runtimes/index.js';
import { createServices, prepareCommand, runPreparedCommand } from '../server/index.js';
import { expandHome } from '../util/index.js';
import { auditShellRun } from './audit-run.js';
import { configOrExit } from './config.js';

interface RunOptions {
  language?: Language;
  timeoutMs?: number;
  mode?: string;
  workingDir?: string;
  json?: boolean;
  /** execute_command from the shell: a command line run in the command workspace. */
  command?: string;
  /** Code mode: the downstream tools the code may call (names, `*` wildcards), as allowed_tools. */
  allowedTools?: string[];
}

/** execute_command's default timeout (60 s, MassGen's), for --command without --timeout-ms. */
const COMMAND_TIMEOUT_MS = 60_000;

const BY_EXTENSION: Record<string, Language> = {
  '.py': 'python',
  '.js': 'node',
  '.mjs': 'node',
  '.cjs': 'node',
  '.ts': 'typescript',
  '.mts': 'typescript',
  '.sh': 'bash',
  '.bash': 'bash',
};

export async function runCommand(
  file: string | undefined,
  args: string[],
  options: RunOptions,
): Promise<void> {
  // One execution gains nothing from a warm pool, and its processes would keep the CLI alive.
  const config = configOrExit({
    ...(options.mode && { CODEXEC_SANDBOX_MODE: options.mode }),
    CODEXEC_POOL_SIZE: '0',
  });
  if (options.command !== undefined) {
    if (file !== undefined) fail('give either a file or --command, not both');
    return runCommandLine(config, options.command, options);
  }
  if (file === undefined) fail('give a file to run (or - for stdin), or --command "…"');
  const language = options.language ?? BY_EXTENSION[extname(file)];
  if (!language) fail(`cannot tell the language of ${file}; pass --language`);
  // From the shell, a relative --working-dir is the shell's own directory's.
  const dir = options.workingDir === undefined ? undefined : expandHome(options.workingDir);
  const services = await createServices(shellConfig(config, dir));
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  // Code mode as execute_code has it: with downstream servers (mcp.json), every python or node
  // run gets the helpers; --allowed-tools says what it may call. Ended (and its servers closed) after.
  const ended = new AbortController();
  const explicit = options.allowedTools !== undefined;
  const codeMode =
    explicit || (services.bridge.configured && language !== 'bash')
      ? {
          bridge: services.bridge.openRun({
            allowedTools: options.allowedTools ?? [],
            explicit,
            signal: ended.signal,
          }),
        }
      : {};
  try {
    const code = file === '-' ? await text(process.stdin) : await readFile(file, 'utf8');
    const workingDir = dir === undefined ? undefined : services.hostDirs.open(dir, 'working_dir');
    const attempt = { tool: 'run', language, code } as const;
    const result = await services.engine
      .run(
        { language, code, timeoutMs: options.timeoutMs, workingDir, args, ...codeMode },
        {
          signal: controller.signal,
          onOutput: streamTo(options),
        },
      )
      .catch(async (error: unknown) => {
        await auditShellRun(services, attempt, {});
        throw error;
      });
    await auditShellRun(services, attempt, { result });
    await services.logs.flush();
    report(result, options);
  } catch (error) {
    if (error instanceof CodexecError) fail(error.message);
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') fail(`cannot read ${file}`);
    throw error;
  } finally {
    ended.abort();
    await services.bridge.close();
  }
}

/**
 * The operator names --working-dir at the shell, as trusted as a setting: it is one more allowed
 * root for this run. Its other rules stay: no symlink on the way, run as its owner (a root shell
 * in a root-owned directory is refused, as a tool call would be).
 */
function shellConfig(config: Config, dir: string | undefined): Config {
  if (dir === undefined) return config;
  const allowedPaths = [...config.command.allowedPaths, dir];
  return { ...config, command: { ...config.command, allowedPaths } };
}

/** `codexec run --command`: execute_command's code path (workspace, lists, venv), from the shell. */
async function runCommandLine(config: Config, command: string, options: RunOptions): Promise<void> {
  // A relative work_dir is the command workspace's, as the tool's is.
  const dir = options.workingDir;
  const absolute = dir !== undefined && (dir.startsWith('~') || isAbsolute(dir));
  const services = await createServices(shellConfig(config, absolute ? expandHome(dir) : undefined));
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  const attempt = { tool: 'run_command', language: 'bash', code: command } as const;
  try {
    await loadShellParser();
    const prepared = await prepareCommand(services, {
      command,
      timeoutMs: options.timeoutMs ?? COMMAND_TIMEOUT_MS,
      workDir: options.workingDir,
    });
    // Bad input (work_dir) is refused above with no entry, as execute_command's is; a refusal
    // by the rules or command lists is an attempt, and audited.
    try {
      checkCommand(command, config.command, services.rules);
    } catch (error) {
      if (error instanceof CommandBlockedError)
        await auditShellRun(services, attempt, { refusedBy: error.pattern || null });
      throw error;
    }
    const result = await runPreparedCommand(services, prepared, {
      signal: controller.signal,
      onOutput: streamTo(options),
    }).catch(async (error: unknown) => {
      await auditShellRun(services, attempt, {});
      throw error;
    });
    await auditShellRun(services, attempt, { result });
    await services.logs.flush();
    report(result, options);
  } catch (error) {
    if (error instanceof CodexecError) fail(`${error.message} (${error.code})`);
    throw error;
  }
}

function fail(message: string): never {
  process.stderr.write(`codexec: ${message}\n`);
  process.exit(2);
}

/** Output goes to the terminal as it comes, unless the whole result is printed as JSON at the end. */
const streamTo = (options: { json?: boolean | undefined }) =>
  options.json ? undefined : (stream: 'stdout' | 'stderr', chunk: string) => process[stream].write(chunk);

/** Print the result (JSON, or a timeout note after the streamed output) and pass the exit code on. */
function report(
  result: { exit_code: number | null; timed_out: boolean; duration_ms: number },
  options: { json?: boolean | undefined },
): void {
  if (options.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else if (result.timed_out) process.stderr.write(`codexec: timed out after ${result.duration_ms} ms\n`);
  process.exitCode = result.exit_code ?? (result.timed_out ? 124 : 1);
}
