// Shell lines read as bash reads them: each simple command found by a real parser, its words with
// quotes, escapes, wrappers and paths taken off, for the command lists and the rules to check.

export { MAX_PARSE_CHARS, parseShell, type ShellParse, type SimpleCommand } from './parse.js';
export { loadShellParser } from './parser.js';
export { commandName, innerShellCode, programArgv } from './program.js';
export { decodeAnsiC, unescapeBare, unescapeDoubleQuoted } from './words.js';
