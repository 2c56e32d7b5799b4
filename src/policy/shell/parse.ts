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
  /** `program`'s words, without the redirections (`['ls', '-l']`). */
  readonly argv: readonly string[];
}

export type ShellParse =
  | { readonly ok: true; readonly commands: readonly SimpleCommand[] }
  | { readonly ok: false; readonly reason: string };

/** Longest text parsed (UTF-16 units): ~0.1 s of event loop on a busy 2-core box; past it, unreadable. */
export const MAX_PARSE_CHARS = 16_384;

// A command is checked twice in a row (the command lists, then the rules), with the code of any
// `bash -c` inside it: keep the last few parses.
const recent = new Map<string, ShellParse>();
const RECENT = 4;

/**
 * Every simple command of a bash line or script: those joined by ; && || | & and newlines, and
 * those inside $(…), backticks, <(…), ( ), { }, if/while/for/case bodies, function bodies and
 * heredocs. `ok: false` when the grammar cannot read the text (or it is longer than
 * MAX_PARSE_CHARS): the caller decides what an unreadable line means. Needs loadShellParser().
 */
export function parseShell(text: string): ShellParse {
  const known = recent.get(text);
  if (known) return known;
  const parse = parseUncached(text);
  if (recent.size >= RECENT) recent.delete(recent.keys().next().value as string);
  recent.set(text, parse);
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
    // The search runs inside the WASM module, in document order (a node before what it holds):
    // crossing into JS per node costs more than parsing, so the tree is never walked from JS.
    const nodes = root.descendantsOfType(COMMAND_TYPES);
    const taken = new Set<number>();
    const commands: SimpleCommand[] = [];
    for (const node of nodes) {
      if (!node || taken.has(node.id)) continue;
      const command = simpleCommand(node, taken);
      if (command) commands.push(command);
    }
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

/**
 * The simple command `node` is, if it is one. `taken` collects the nodes that belong to it (its
 * assignments; the command a redirected_statement wraps) so the caller does not read them again.
 */
function simpleCommand(node: Node, taken: Set<number>, outer?: Node): SimpleCommand | undefined {
  switch (node.type) {
    case 'redirected_statement': {
      // `ls > out`: the redirections are the command's. Alone (`> out`) they are a command too.
      const body = node.childForFieldName('body');
      if (!body) return build(node, [], [], [], node);
      if (!COMMAND_TYPES.includes(body.type)) return undefined; // `{ …; } > out`: its commands are found alone
      taken.add(body.id);
      return simpleCommand(body, taken, node);
    }
    case 'command': {
      const assigns = takeAll(node.namedChildren, 'variable_assignment', taken);
      const args = [node.childForFieldName('name'), ...node.childrenForFieldName('argument')];
      const argv = args.filter((a): a is Node => a !== null).map(wordText);
      return build(node, assigns.map(assignmentText), argv, programArgv(argv), outer);
    }
    case 'declaration_command':
    case 'unset_command': {
      // declare, export, local, readonly, typeset, unset: a keyword, then names and assignments.
      const words = node.namedChildren.filter((c): c is Node => c !== null && c.type !== 'comment');
      takeAll(words, 'variable_assignment', taken);
      const argv = [node.child(0)?.text ?? '', ...words.map(assignmentText)];
      return build(node, [], argv, argv, outer);
    }
    default: {
      // Only assignments (`PATH=/tmp`): still a simple command, which later lookups depend on.
      // (Not the arithmetic `i=0` of `for ((i=0; …))`: the parent is asked only for these.)
      if (node.parent?.type === 'c_style_for_statement') return undefined;
      const assigns = node.type === 'variable_assignment' ? [node] : takeAll(node.namedChildren, '', taken);
      return build(node, assigns.map(assignmentText), [], [], outer);
    }
  }
}

/** The nodes of `type` (any, if '') among `nodes`, marked as taken. */
function takeAll(nodes: (Node | null)[], type: string, taken: Set<number>): Node[] {
  const found = nodes.filter((n): n is Node => n !== null && (type === '' || n.type === type));
  for (const n of found) taken.add(n.id);
  return found;
}

function build(node: Node, assigns: string[], argv: string[], program: string[], outer?: Node) {
  const redirects = [
    ...node.childrenForFieldName('redirect'),
    ...(outer && outer !== node ? outer.childrenForFieldName('redirect') : []),
  ]
    .filter((r): r is Node => r !== null)
    .map(redirectText);
  return {
    raw: (outer ?? node).text,
    words: [...assigns, ...argv, ...redirects].join(' '),
    program: [...program, ...redirects].join(' '),
    argv: program,
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
