import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import type { Parser } from 'web-tree-sitter';

// The shell parser: tree-sitter's bash grammar (`tree-sitter-bash`, its WASM build) run by
// `web-tree-sitter`, both kept by the tree-sitter project. Chosen 2026-11-26 over:
// - `sh-syntax` (mvdan/sh in WASM): its JS tree is shallow (a statement's command comes back as
//   {Pos, End}, no words), and it instantiates its WASM module on every call (11 ms a parse);
// - `mvdan-sh` (mvdan/sh by GopherJS): archived by its author; every field read converts Go values
//   to JS, so walking a one-line command's tree took ~20× tree-sitter's time (11 ms vs 0.5 ms,
//   same busy machine), and GopherJS leaves a global `require` behind;
// - `bash-parser`: unmaintained since 2017, 21 dependencies.
// Only the grammar's .wasm file is used: its native binding (and install script) is not needed.
// tree-sitter recovers from errors; we don't: a tree with an ERROR or MISSING node is a line the
// parser cannot read, and the callers fail closed on it. Loading is async (~20 ms of CPU, once),
// so it happens on the first request that needs it, not at server start. Measured (CPU time, 2
// cores shared by 8 busy users): ~0.1 ms for a one-line command, ~1 ms for 1,000 characters of
// script, ~15 ms at MAX_PARSE_CHARS. web-tree-sitter itself is imported then too: a server that
// never runs shell code never loads it (idle memory).
// The grammar's WASM is compiled by Liftoff alone: V8 otherwise compiles it again with TurboFan on
// background threads, ~0.9 s of CPU per server (Node 20, this machine) that no parse here waited
// for or gained from (one-line commands and 100,000-character scripts parsed as fast or faster on
// Liftoff's code), and a process exit waits for that compile to end: a server asked to close just
// after its first shell command took ~0.7 s to go instead of ~0.08 s.

let loading: Promise<void> | undefined;
let parser: Parser | undefined;

/** Load the parser once; later calls return the same promise. A failed load fails every call. */
export function loadShellParser(): Promise<void> {
  loading ??= (async () => {
    setFlagsFromString('--liftoff-only');
    const { Language, Parser } = await import('web-tree-sitter');
    await Parser.init();
    const pkg = createRequire(import.meta.url).resolve('tree-sitter-bash/package.json');
    const language = await Language.load(join(dirname(pkg), 'tree-sitter-bash.wasm'));
    const ready = new Parser();
    ready.setLanguage(language);
    parser = ready;
  })();
  return loading;
}

/** The loaded parser; callers await loadShellParser() first (the policy gate does). */
export function shellParser(): Parser {
  if (!parser) throw new Error('the shell parser is used before loadShellParser() finished');
  return parser;
}
