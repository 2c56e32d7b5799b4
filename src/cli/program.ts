// codexec's commands and their options (commander); src/cli.ts, the bin, loads this after it has
// sized the heap. Each command's code is loaded only when that command runs.
import { Command, InvalidArgumentError } from 'commander';
import { SANDBOX_MODES } from '../config/index.js';
import { STATUSES } from '../logs/index.js';
import { LANGUAGES } from '../runtimes/index.js';
import { VERSION } from '../server/index.js';
import { CLIENTS } from '../setup/index.js';

/**
 * A subcommand's code, loaded when it is the one that runs: a stdio server (started and left
 * running by every MCP client) never holds setup's, doctor's or the logs' modules in memory.
 */
function lazy<A extends unknown[]>(load: () => Promise<(...args: A) => unknown>) {
  return async (...args: A) => {
    await (await load())(...args);
  };
}

const positiveInt = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive whole number');
  return n;
};
const port = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new InvalidArgumentError('expected a port, 0-65535');
  return n;
};
const ENGINES = ['auto', 'docker', 'podman'] as const;
const oneOf = (choices: readonly string[]) => (value: string) => {
  if (!choices.includes(value)) throw new InvalidArgumentError(`expected one of ${choices.join(', ')}`);
  return value;
};

const program = new Command('codexec')
  .description('MCP server that runs Python, JavaScript, TypeScript and Bash in a sandbox')
  .version(VERSION);

program
  .command('serve')
  .description('serve MCP over stdio (what an MCP client launches), or over Streamable HTTP with --http')
  .option('--http', 'serve MCP over Streamable HTTP at /mcp (bearer tokens) instead of stdio')
  .option('--host <host>', 'with --http: address to bind', '127.0.0.1')
  .option('--port <port>', 'with --http: port (0 picks a free one, printed on stderr)', port, 8765)
  .option('--no-auth', 'with --http: no bearer tokens (refused unless --host is loopback)')
  .action(lazy(async () => (await import('./serve.js')).serveCommand));

program
  .command('run')
  .description(
    'run one file (or - for stdin), or a command line with --command, through the same engine; exit code is passed through',
  )
  .argument('[file]', 'file to run, or - to read code from stdin')
  .argument('[args...]', 'arguments for the program')
  .option(
    '-l, --language <language>',
    `one of ${LANGUAGES.join(', ')} (default: from the file extension)`,
    oneOf(LANGUAGES),
  )
  .option('-t, --timeout-ms <ms>', 'wall-clock limit', positiveInt)
  .option('-m, --mode <mode>', `sandbox mode: ${SANDBOX_MODES.join(', ')}`, oneOf(SANDBOX_MODES))
  .option('-C, --working-dir <dir>', 'run in this directory instead of a fresh workspace')
  .option('--json', 'print the full result as JSON instead of streaming output')
  .option(
    '-c, --command <line>',
    'run this command line as execute_command does (bash -c in the command workspace; -C is its work_dir)',
  )
  .option(
    '--allowed-tools <names>',
    "code mode: the downstream MCP servers' tools the code may call, comma-separated (* wildcards)",
    (value: string) =>
      value
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean),
  )
  .action(lazy(async () => (await import('./run.js')).runCommand));

program
  .command('setup')
  .description(`add codexec to an MCP client's config, then check it starts (${CLIENTS.join(', ')})`)
  .argument('<client>', CLIENTS.join(' | '))
  .option('--dry-run', 'show the file as it would be written; write nothing')
  .option('--print', "print only the entry to paste, in the client's format")
  .option('--config <path>', "the client's config file, when not in its usual place")
  .option('--name <name>', 'the server name in the client', 'codexec')
  .option(
    '--env <KEY=VALUE>',
    'a setting for the server (repeatable)',
    (value: string, all: string[]) => [...all, value],
    [],
  )
  .option(
    '--project [dir]',
    'let code work in this project directory (default: the current one): it is added to CODEXEC_ALLOWED_PATHS',
  )
  .option('--no-verify', 'skip starting the server as written and listing its tools')
  .action(lazy(async () => (await import('./setup.js')).setupCommand));

program
  .command('wrappers')
  .description('write typed modules for the tools of the downstream MCP servers (code mode)')
  .option('--lang <lang>', 'ts or python', 'ts')
  .option('--out <dir>', 'where to write them', 'mcp-wrappers')
  .option('--server <name>', 'only this server')
  .action(lazy(async () => (await import('./wrappers.js')).wrappersCommand));

program
  .command('doctor')
  .description('report which sandbox layers and interpreters work here')
  .action(lazy(async () => (await import('./doctor.js')).doctorCommand));

const image = program.command('image').description('the container image of sandbox mode docker');
image
  .command('build')
  .description(
    'build the sandbox image from Dockerfile.sandbox, or with --from-host from this machine (no registry)',
  )
  .option('--from-host', "build from this host's interpreters and their libraries; needs no registry")
  .option('--tag <name>', 'image name (default: CODEXEC_DOCKER_IMAGE, codexec-sandbox)')
  .option('--engine <engine>', 'auto, docker or podman (default: CODEXEC_CONTAINER_ENGINE)', oneOf(ENGINES))
  .action(lazy(async () => (await import('./image.js')).imageBuildCommand));

const logs = program.command('logs').description('search and show past executions (the execution log)');
logs
  .command('search')
  .description('search past executions, newest first (same filters as search_execution_logs)')
  .option('-l, --language <language>', `one of ${LANGUAGES.join(', ')}`)
  .option('-s, --status <status>', `one of ${STATUSES.join(', ')}`)
  .option('-q, --query <words>', 'words (or word starts) that must appear in code, output or the script name')
  .option('--since <date>', 'only runs at or after this UTC date or ISO date-time')
  .option('--session-id <id>', 'only the runs of this session')
  .option('--script <name>', 'only the runs of this saved script')
  .option('-n, --limit <n>', 'how many to show (default 20, max 500)', positiveInt)
  .option('--json', 'print the result as JSON')
  .action(lazy(async () => (await import('./logs.js')).logsSearchCommand));
logs
  .command('show')
  .description('show the full log entry of one execution')
  .argument('<execution_id>', 'exec_ followed by 12 hex characters')
  .option('--json', 'print the entry as JSON')
  .action(lazy(async () => (await import('./logs.js')).logsShowCommand));

const audit = program.command('audit').description('the audit trail of every attempt to run code');
audit
  .command('verify')
  .description(
    "check the hash chain of the audit files (postgres store: every replica's chain); exit 1 naming the first bad entry",
  )
  .option('--json', 'print the report as JSON')
  .action(lazy(async () => (await import('./audit.js')).auditVerifyCommand));

await program.parseAsync();
