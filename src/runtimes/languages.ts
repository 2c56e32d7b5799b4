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
}

// Node code runs as an ES module (top-level await, import) that can still use require and
// __dirname, the way most snippets are written. The shim shares line 1 so line numbers hold.
const NODE_SHIM =
  "import { createRequire as __codexecRequire } from 'node:module'; import { fileURLToPath as __codexecPath } " +
  "from 'node:url'; const require = __codexecRequire(import.meta.url); const __filename = " +
  '__codexecPath(import.meta.url); const __dirname = __codexecPath(new URL(".", import.meta.url));';
const DECLARES_SHIMMED =
  /\b(?:const|let|var|function|class|import)\s+(?:\{[^}]*\b)?(?:require|__filename|__dirname)\b/;

function withNodeShim(code: string): string {
  if (DECLARES_SHIMMED.test(code)) return code;
  const hashbang = code.startsWith('#!') ? code.slice(0, code.indexOf('\n') + 1 || code.length) : '';
  return `${hashbang}${NODE_SHIM} ${code.slice(hashbang.length)}`;
}

const nodeArgv = (interpreter: string, file: string, args: readonly string[]) => [interpreter, file, ...args];

export const RUNTIMES: Readonly<Record<Language, Runtime>> = {
  python: {
    language: 'python',
    interpreter: 'python',
    extension: 'py',
    prepare: (code) => code,
    argv: (interpreter, file, args) => [interpreter, file, ...args],
    // Unbuffered so output streams while the code runs; UTF-8 whatever the locale.
    env: { PYTHONUNBUFFERED: '1', PYTHONIOENCODING: 'utf-8', PYTHONDONTWRITEBYTECODE: '1' },
  },
  node: {
    language: 'node',
    interpreter: 'node',
    extension: 'mjs',
    prepare: withNodeShim,
    argv: nodeArgv,
    env: {},
  },
  typescript: {
    language: 'typescript',
    interpreter: 'node',
    extension: 'mjs',
    prepare: (code) => withNodeShim(transpileTypeScript(code)),
    argv: nodeArgv,
    env: {},
  },
  bash: {
    language: 'bash',
    interpreter: 'bash',
    extension: 'sh',
    prepare: (code) => code,
    argv: (interpreter, file, args) => [interpreter, file, ...args],
    env: {},
  },
};
