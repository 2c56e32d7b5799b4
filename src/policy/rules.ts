import { RUNTIME_NAMES } from '../config/index.js';
import { innerShellCode, parseShell } from './shell/index.js';

export const RULE_ACTIONS = ['deny', 'ask', 'allow'] as const;
export type RuleAction = (typeof RULE_ACTIONS)[number];

/** A rule as data: a regex (source) over the code or command, for some languages, and what to do. */
export interface RuleSpec {
  readonly id: string;
  readonly description: string;
  readonly languages: readonly string[];
  /** RegExp source, compiled with the `m` flag: ^ and $ match at line boundaries. */
  readonly pattern: string;
  readonly action: RuleAction;
}

export interface Rule extends RuleSpec {
  readonly regex: RegExp;
}

/** What the rules say about one piece of code: the deciding rule, or none matched. */
export interface RuleVerdict {
  readonly action: RuleAction;
  readonly rule: string;
  readonly description: string;
}

/** The compiled rule list a server runs with; `source` says where overrides came from. */
export interface RuleSet {
  readonly rules: readonly Rule[];
  /** The policy.json that was applied, or null when there is none. */
  readonly source: string | null;
}

export function compileRule(spec: RuleSpec): Rule {
  return { ...spec, regex: new RegExp(spec.pattern, 'm') };
}

// The strictest matching rule decides, so an `allow` never hides a `deny` that also matched.
const STRICTNESS: Record<RuleAction, number> = { deny: 3, ask: 2, allow: 1 };

/** Languages whose code is a shell line: the rules also read each of its simple commands. */
export const SHELL_LANGUAGES: readonly string[] = ['bash'];

/**
 * Check code (or a command, or a package spec) against the rules for its language. Returns the
 * strictest matching rule (deny > ask > allow; the first listed among equals), or undefined.
 * Shell code is read twice over: as written, and as each simple command's program line, with
 * quotes, escapes, wrappers and paths taken off (`command /bin/r""m -rf /` reads `rm -rf /`), so
 * one pattern serves both; code handed to `bash -c` or `eval` is read the same way. Code the
 * parser cannot read is checked as written only.
 */
export function checkRules(text: string, language: string, rules: RuleSet): RuleVerdict | undefined {
  const views = [text, ...(SHELL_LANGUAGES.includes(language) ? programLines(text) : [])];
  let best: Rule | undefined;
  for (const rule of rules.rules) {
    if (!rule.languages.includes(language)) continue;
    if (best && STRICTNESS[rule.action] <= STRICTNESS[best.action]) continue;
    if (views.some((view) => rule.regex.test(view))) best = rule;
  }
  return best && { action: best.action, rule: best.id, description: best.description };
}

/** Each simple command's program line, and those of code it hands a shell (two levels deep). */
function programLines(text: string, depth = 0): string[] {
  const parsed = parseShell(text);
  if (!parsed.ok) return [];
  return parsed.commands.flatMap((command) => {
    const inner = depth < 2 ? innerShellCode(command.argv) : undefined;
    return [command.program, ...(inner === undefined ? [] : [inner, ...programLines(inner, depth + 1)])];
  });
}

/** Languages a rule may name: the runtimes, which is also what `execute_command` checks as bash. */
export const RULE_LANGUAGES = RUNTIME_NAMES;
