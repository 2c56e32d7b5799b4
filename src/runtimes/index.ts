// Language runtimes: how code in each language becomes a file and an argv, and where the
// interpreters live (resolved once to absolute real binaries).

export { type InterpreterKind, Interpreters } from './interpreters.js';
export {
  LANGUAGE_ALIASES,
  LANGUAGES,
  type Language,
  NODE_GLOBALS_IMPORT,
  RUNTIMES,
  type Runtime,
} from './languages.js';
export { CodeSyntaxError, transpileTypeScript } from './typescript.js';
