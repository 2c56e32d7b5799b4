import { packagePath } from '../util/index.js';
import type { InterpreterKind } from './interpreters.js';
import { transpileTypeScript } from './typescript.js';

export const LANGUAGES = ['python', 'node', 'typescript', 'bash'] as const;
export type Language = (typeof LANGUAGES)[number];

/** Other names a caller may give a language (`py`, `nodejs`, …); results always carry the language's own. */
export const LANGUAGE_ALIASES = {
  py: 'python',
  nodejs: 'node',
  js: 'node',
  ts: 'typescript',
  shell: 'bash',
  sh: 'bash',
} as const satisfies Record<string, Language>;

export interface Runtime {
  readonly language: Language;
  readonly interpreter: InterpreterKind;
  /** Extension of the script file the code is written to. */
  readonly extension: string;
  /** Turn submitted code into the file's contents (transpile, add shims). */
  prepare(code: string): string;
  /** argv for a one-shot run of `file`; argv[0] is the interpreter. */
  argv(interpreter: string, file: string, args: readonly string[]): string[];
  /** Environment variables the runtime needs on top of the allowlisted ones. */
  readonly env: Readonly<Record<string, string>>;
  /** Files of codexec's the one-shot argv loads, which the sandbox must let it read. */
  readonly files: readonly string[];
}

// Node code runs as an ES module (top-level await, import) that can still use require and
// __dirname, the way most snippets are written: a module loaded first makes them globals, so the
// file holds the user's code alone and errors point at the user's line and column.
const NODE_GLOBALS = packagePath('drivers', 'node_globals.mjs');
const NODE_FILES = [NODE_GLOBALS, packagePath('drivers', 'node_program.mjs')];
/** Node's flags that load NODE_GLOBALS ahead of a one-shot program. */
export const NODE_GLOBALS_IMPORT = ['--import', NODE_GLOBALS] as const;

const nodeArgv = (interpreter: string, file: string, args: readonly string[]) => [
  interpreter,
  ...NODE_GLOBALS_IMPORT,
  file,
  ...args,
];

export const RUNTIMES: Readonly<Record<Language, Runtime>> = {
  python: {
    language: 'python',
    interpreter: 'python',
    extension: 'py',
    prepare: (code) => code,
    argv: (interpreter, file, args) => [interpreter, file, ...args],
    // Unbuffered so output streams while the code runs; UTF-8 whatever the locale.
    env: { PYTHONUNBUFFERED: '1', PYTHONIOENCODING: 'utf-8', PYTHONDONTWRITEBYTECODE: '1' },
    files: [],
  },
  node: {
    language: 'node',
    interpreter: 'node',
    extension: 'mjs',
    prepare: (code) => code,
    argv: nodeArgv,
    env: {},
    files: NODE_FILES,
  },
  typescript: {
    language: 'typescript',
    interpreter: 'node',
    extension: 'mjs',
    prepare: (code) => transpileTypeScript(code),
    argv: nodeArgv,
    env: {},
    files: NODE_FILES,
  },
  bash: {
    language: 'bash',
    interpreter: 'bash',
    extension: 'sh',
    prepare: (code) => code,
    argv: (interpreter, file, args) => [interpreter, file, ...args],
    env: {},
    files: [],
  },
};
