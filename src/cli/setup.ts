import {
  copyFileSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { stringify as stringifyToml } from 'smol-toml';
import { CodexecError } from '../errors/index.js';
import {
  CLIENTS,
  type ClientName,
  clientConfig,
  type Merged,
  mergeJson,
  mergeToml,
  type ServerEntry,
  verifyEntry,
} from '../setup/index.js';
import { packagePath } from '../util/index.js';

export interface SetupFlags {
  readonly dryRun?: boolean;
  readonly print?: boolean;
  readonly config?: string;
  readonly name: string;
  readonly env: string[];
  /** `--project [dir]`: a directory code may work in (true: the current one). */
  readonly project?: string | true;
  /** commander's `--no-verify`: true unless the flag is given. */
  readonly verify: boolean;
}

const fail = (message: string): never => {
  process.stderr.write(`codexec setup: ${message}\n`);
  process.exit(2);
};

/**
 * `codexec setup <client>`: merge codexec into the client's config (other servers and keys kept,
 * the previous file as `.bak`, nothing written when it is already there), then start the server
 * exactly as written and list its tools. Exit 0 when it works, 1 when the check fails, 2 for bad
 * input or a config file it cannot read.
 */
export async function setupCommand(client: string, flags: SetupFlags): Promise<void> {
  if (!(CLIENTS as readonly string[]).includes(client))
    fail(`unknown client "${client}"; one of ${CLIENTS.join(', ')}`);
  if (!/^[A-Za-z0-9_-]+$/.test(flags.name)) fail(`--name: letters, digits, "-" and "_" only`);
  const target = clientConfig(client as ClientName);
  const path = flags.config ?? target.path;
  const entry: ServerEntry = {
    // This very installation, by absolute paths: no PATH lookup, no network (npx) at start-up.
    command: process.execPath,
    args: [packagePath('dist', 'cli.js'), 'serve'],
    env: withProject(Object.fromEntries(flags.env.map(parseEnv)), flags.project),
  };
  const shaped = target.entry(entry);
  if (flags.print) {
    const snippet =
      target.format === 'toml'
        ? stringifyToml({ mcp_servers: { [flags.name]: shaped } })
        : JSON.stringify({ [target.key]: { [flags.name]: shaped } }, null, 2);
    process.stdout.write(`${snippet}\n`);
    return;
  }
  let merged: Merged;
  let before: string | undefined;
  try {
    before = readIfThere(path);
    merged =
      target.format === 'toml'
        ? await mergeToml(path, before, flags.name, shaped)
        : await mergeJson(path, before, target.key, flags.name, shaped);
  } catch (error) {
    if (error instanceof CodexecError) fail(error.message);
    throw error;
  }
  if (merged.changed && flags.dryRun) {
    process.stdout.write(`${target.client}: would write ${path}:\n${merged.text}`);
    return;
  }
  // The entry is checked before it is written: a server that does not start leaves the file as it was.
  const tools = flags.verify && !flags.dryRun ? await checked(entry, merged.changed) : undefined;
  if (!merged.changed) {
    process.stdout.write(`${target.client}: codexec is already set up in ${path} (nothing written)\n`);
  } else {
    write(path, merged.text, before);
    process.stdout.write(
      `${target.client}: added "${flags.name}" to ${path}${before === undefined ? '' : ` (previous file: ${path}.bak)`}\n`,
    );
    if (merged.note) process.stdout.write(`note: ${merged.note}\n`);
  }
  if (tools) process.stdout.write(`works: the server started as written and lists ${tools.length} tools\n`);
}

/** The tools the entry's server lists, started exactly as written; exit 1 when it does not answer. */
async function checked(entry: ServerEntry, unwritten: boolean): Promise<readonly unknown[]> {
  try {
    return await verifyEntry(entry);
  } catch (error) {
    process.stderr.write(
      `codexec setup: the server as written does not answer: ${(error as Error).message}` +
        `${unwritten ? ' (nothing written)' : ''}\n`,
    );
    process.exit(1);
  }
}

/**
 * `--project`: the directory (absolute, real) joins CODEXEC_ALLOWED_PATHS, after any given with
 * --env, so the client's code may name it (or a directory beneath it) as working_dir.
 */
function withProject(
  env: Record<string, string>,
  project: string | true | undefined,
): Record<string, string> {
  if (project === undefined) return env;
  let dir: string;
  try {
    dir = realpathSync(project === true ? process.cwd() : project);
  } catch {
    return fail(`--project ${project}: no such directory`);
  }
  if (!statSync(dir).isDirectory()) fail(`--project ${dir}: not a directory`);
  const listed = env.CODEXEC_ALLOWED_PATHS ? env.CODEXEC_ALLOWED_PATHS.split(',') : [];
  return { ...env, CODEXEC_ALLOWED_PATHS: [...listed.filter((path) => path !== dir), dir].join(',') };
}

function parseEnv(pair: string): [string, string] {
  const at = pair.indexOf('=');
  if (at <= 0) fail(`--env ${JSON.stringify(pair)}: expected KEY=VALUE`);
  return [pair.slice(0, at), pair.slice(at + 1)];
}

function readIfThere(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** The previous file to `.bak`, then the new one by rename (a reader never sees half), its mode kept. */
function write(path: string, text: string, before: string | undefined): void {
  mkdirSync(dirname(path), { recursive: true });
  // A new file may come to hold tokens (env): private until the user says otherwise.
  const mode = before === undefined ? 0o600 : statSync(path).mode & 0o777;
  if (before !== undefined) copyFileSync(path, `${path}.bak`);
  const temp = `${path}.codexec-${process.pid}.tmp`;
  writeFileSync(temp, text, { mode });
  renameSync(temp, path);
}
