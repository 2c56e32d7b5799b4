import type { Node } from 'web-tree-sitter';
import { shellParser } from './parser.js';
import { programArgv } from './program.js';
import { wordText } from './words.js';

/** One simple command of a shell line, wherever it sits: in a pipeline, `$(…)`, a function body… */
export interface SimpleCommand {
  /** As written: the command's source with its redirections (`FOO=1 "ls" -l > out`). */
  readonly raw: string;
  /** As bash reads it: assignments, words and redirections, each normalised, joined by spaces. */
  readonly words: string;
  /** The program that runs and its arguments, wrappers skipped, by basename (`ls -l > out`). */
  readonly program: string;
}

export type ShellParse =
  | { readonly ok: true; readonly commands: readonly SimpleCommand[] }
  | { readonly ok: false; readonly reason: string };

/** Longest text parsed (UTF-16 units, ~1 ms of parsing a KiB): past it a line is unreadable. */
export const MAX_PARSE_CHARS = 262_144;

// A command is checked twice in a row (the command lists, then the rules): keep the last parse.
let last: { text: string; parse: ShellParse } | undefined;

/**
 * Every simple command of a bash line or script: those joined by ; && || | & and newlines, and
 * those inside $(…), backticks, <(…), ( ), { }, if/while/for/case bodies, function bodies and
 * heredocs. `ok: false` when the grammar cannot read the text (or it is longer than
 * MAX_PARSE_CHARS): the caller decides what an unreadable line means. Needs loadShellParser().
 */
export function parseShell(text: string): ShellParse {
  if (last?.text === text) return last.parse;
  const parse = parseUncached(text);
  last = { text, parse };
  return parse;
}

/** The node types that may be a simple command (simpleCommand() decides). */
const COMMAND_TYPES = [
  'command',
  'declaration_command',
  'unset_command',
  'variable_assignment',
  'variable_assignments',
  'redirected_statement',
];

function parseUncached(text: string): ShellParse {
  if (text.length > MAX_PARSE_CHARS) {
    return { ok: false, reason: `it is longer than the ${MAX_PARSE_CHARS} characters the parser reads` };
  }
  const tree = shellParser().parse(text);
  if (!tree) return { ok: false, reason: 'the shell parser gave up on it' };
  try {
    const root = tree.rootNode;
    if (root.hasError) return { ok: false, reason: `bash cannot parse it (${firstError(root)})` };
    // The search runs inside the WASM module: crossing into JS per node costs more than parsing.
    const nodes = root.descendantsOfType(COMMAND_TYPES);
    const commands = nodes.flatMap((node) => (node && simpleCommand(node)) || []);
    return { ok: true, commands };
  } finally {
    tree.delete();
  }
}

/** Where the grammar failed, for the refusal: the first ERROR or MISSING node, depth first. */
function firstError(root: Node): string {
  const stack: Node[] = [root];
  for (let node = stack.pop(); node; node = stack.pop()) {
    if (node.isMissing) return `a missing ${node.type} at character ${node.startIndex + 1}`;
    if (node.isError) return `\`${node.text.slice(0, 40)}\` at character ${node.startIndex + 1}`;
    const children = node.children.filter((c): c is Node => c?.hasError === true);
    stack.push(...children.reverse());
  }
  return 'a syntax error';
}

const ASSIGNMENT_HOLDERS = new Set(['command', 'declaration_command', 'variable_assignments']);

function simpleCommand(node: Node): SimpleCommand | undefined {
  switch (node.type) {
    case 'command': {
      const assigns = node.namedChildren.filter((c) => c?.type === 'variable_assignment') as Node[];
      const args = [node.childForFieldName('name'), ...node.childrenForFieldName('argument')];
      const argv = args.filter((a): a is Node => a !== null).map(wordText);
      return build(node, assigns.map(assignmentText), argv, programArgv(argv));
    }
    case 'declaration_command':
    case 'unset_command': {
      // declare, export, local, readonly, typeset, unset: a keyword, then names and assignments.
      const words = node.namedChildren.filter((c): c is Node => c !== null && c.type !== 'comment');
      const argv = [node.child(0)?.text ?? '', ...words.map(assignmentText)];
      return build(node, [], argv, argv);
    }
    case 'variable_assignment':
    case 'variable_assignments': {
      // Only assignments (`PATH=/tmp`): still a simple command, which later lookups depend on.
      if (node.parent && ASSIGNMENT_HOLDERS.has(node.parent.type)) return undefined;
      const assigns = node.type === 'variable_assignment' ? [node] : (node.namedChildren as Node[]);
      return build(node, assigns.map(assignmentText), [], []);
    }
    case 'redirected_statement':
      // Redirections alone (`> file`); with a body they belong to its command (build reads them).
      return node.childForFieldName('body') ? undefined : build(node, [], [], []);
    default:
      return undefined;
  }
}

function build(node: Node, assigns: string[], argv: string[], program: string[]): SimpleCommand {
  // `ls > out` is a redirected_statement whose body is the command: its redirections are the command's.
  const parent = node.parent;
  const outer =
    parent?.type === 'redirected_statement' && parent.childForFieldName('body')?.id === node.id
      ? parent
      : undefined;
  const redirects = [
    ...node.childrenForFieldName('redirect'),
    ...(outer?.childrenForFieldName('redirect') ?? []),
  ]
    .filter((r): r is Node => r !== null)
    .map(redirectText);
  return {
    raw: (outer ?? node).text,
    words: [...assigns, ...argv, ...redirects].join(' '),
    program: [...program, ...redirects].join(' '),
  };
}

function assignmentText(node: Node): string {
  if (node.type !== 'variable_assignment') return wordText(node);
  const name = node.childForFieldName('name');
  const value = node.childForFieldName('value');
  if (!name || !value || value.type === 'array') return node.text;
  const op = node.text.slice(name.endIndex - node.startIndex, value.startIndex - node.startIndex);
  return `${name.text}${op}${wordText(value)}`;
}

function redirectText(node: Node): string {
  if (node.type === 'heredoc_redirect') {
    const start = node.namedChildren.find((c) => c?.type === 'heredoc_start');
    return `<< ${start?.text ?? ''}`;
  }
  const target = node.childForFieldName('destination');
  if (!target) return node.text;
  return `${node.text.slice(0, target.startIndex - node.startIndex).trim()} ${wordText(target)}`;
}
