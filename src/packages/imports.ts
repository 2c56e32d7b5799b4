// Whether a Python package pip installed imports. pip can report success for a package whose
// import then fails (a dependency it left to an older system copy, a binary for another Python):
// the install says so, naming the error, rather than leaving the agent to find out at its next run.
// The import runs package code, so it runs in the code sandbox, never on the host.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type CommandResult, figureEnv, PYTHON_SUPPORT_FILES } from '../engine/index.js';
import { sandboxEnv } from '../policy/index.js';

/** At most this many top-level modules of one distribution are imported. */
const MAX_MODULES = 8;

/**
 * The check, run by the sandbox's python with the installed environment where code would see it:
 * each module in turn; the first that fails prints its error and exits 1.
 */
export const IMPORT_CHECK = [
  'import importlib, sys',
  'for name in sys.argv[1:]:',
  '    try:',
  '        importlib.import_module(name)',
  '    except BaseException as error:',
  '        print(f"import {name}: {type(error).__name__}: {error}")',
  '        sys.exit(1)',
].join('\n');

/**
 * The modules distribution `name` installed into `target` (pip's --target, which pip wrote on the
 * host and no code could touch): its top_level.txt, else the first names of its RECORD.
 */
export async function installedModules(target: string, name: string): Promise<string[]> {
  const wanted = normalized(name);
  const entries = await readdir(target).catch(() => [] as string[]);
  const info = entries.find((entry) => {
    const match = /^(.+)-[^-]+\.dist-info$/.exec(entry);
    return match?.[1] !== undefined && normalized(match[1]) === wanted;
  });
  if (!info) return [];
  const listed = await readFile(join(target, info, 'top_level.txt'), 'utf8').catch(() => undefined);
  const names = listed === undefined ? namesOfRecord(await readRecord(target, info)) : listed.split('\n');
  return [...new Set(names.map((line) => line.trim()).filter(isModuleName))].slice(0, MAX_MODULES);
}

async function readRecord(target: string, info: string): Promise<string> {
  return readFile(join(target, info, 'RECORD'), 'utf8').catch(() => '');
}

/** `pkg/__init__.py,…` and `mod.py,…` give `pkg` and `mod`; metadata, data and scripts give none. */
function namesOfRecord(record: string): string[] {
  const names: string[] = [];
  for (const line of record.split('\n')) {
    const path = line.split(',')[0] ?? '';
    const [first, second] = path.split('/');
    if (!first || /\.(dist-info|data)$/.test(first) || first === 'bin' || first === '__pycache__') continue;
    if (second === '__init__.py') names.push(first);
    else if (second === undefined && first.endsWith('.py')) names.push(first.slice(0, -3));
  }
  return names;
}

/** A name importlib can import on its own (not a private helper module nor a path). */
function isModuleName(name: string): boolean {
  return /^[A-Za-z][A-Za-z0-9_]*$/.test(name);
}

/** PEP 503's comparison of distribution names. */
function normalized(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '_');
}

/** What of an install's result the check may change. */
interface InstallOutcome {
  readonly success: boolean;
  readonly package: string;
  readonly install_output: string;
  readonly exit_code: number | null;
  readonly timed_out: boolean;
}

/**
 * The check's step: the installed environment where code will see it (before the system's
 * site-packages: drivers/mpl/sitecustomize.py), its root bound as the placing step binds it, so
 * nothing beneath is resolved on the host.
 */
export function importCheckStep(input: {
  /** The environment (installer.ts PackageEnv): its directory, its root, what code sees after it. */
  readonly env: {
    readonly dir: string;
    readonly root: string;
    readonly beside?: readonly string[] | undefined;
  };
  readonly modules: readonly string[];
  readonly python: string;
  readonly stage: string;
  readonly hostEnv: NodeJS.ProcessEnv;
}) {
  const { env, stage } = input;
  const beside = env.beside ?? [];
  return {
    argv: [input.python, '-c', IMPORT_CHECK, ...input.modules],
    cwd: env.root,
    env: {
      ...sandboxEnv(input.hostEnv, {}),
      ...figureEnv(stage),
      CODEXEC_PYTHON_PACKAGES: [env.dir, ...beside].join(':'),
      HOME: stage,
    },
    writable: [env.root, stage],
    readable: [...PYTHON_SUPPORT_FILES, ...beside],
  };
}

/** An install whose package then failed to import: not a success, and the error says why. */
export function importFailure<Result extends InstallOutcome>(result: Result, check: CommandResult): Result {
  if (check.exit_code === 0) return result;
  const why = check.timed_out
    ? 'importing it did not end within CODEXEC_INSTALL_TIMEOUT_MS'
    : check.stdout.trim() || check.stderr.trim() || `the import check exited ${check.exit_code}`;
  return {
    ...result,
    success: false,
    exit_code: check.exit_code,
    timed_out: result.timed_out || check.timed_out,
    install_output:
      `${result.install_output}\n\n${result.package} installed, but does not import: ${why}. ` +
      'An installed dependency may need another version (install it with its version), or the ' +
      'package may not support this Python.',
  };
}
