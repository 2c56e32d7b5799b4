import { CommandBlockedError } from '../errors/index.js';
import { checkRules, type RuleSet } from './rules.js';

/** The user's command lists (CODEXEC_ALLOWED_COMMANDS / CODEXEC_BLOCKED_COMMANDS). */
export interface CommandLists {
  /** undefined: every command passes this list; []: none does. */
  readonly allowedCommands?: readonly string[] | undefined;
  /** undefined or []: the user blocks nothing (the built-in rules still apply). */
  readonly blockedCommands?: readonly string[] | undefined;
}

/**
 * Python's `re.match`, as MassGen applies its lists: anchored at the start of the command line
 * only, so `pytest.*` matches `pytest` and `pytest -v`, while `pytest .*` misses a bare `pytest`.
 * The group keeps an alternation (`ls|pwd`) anchored as a whole. Patterns are JavaScript syntax.
 */
export function matchesFromStart(pattern: string, command: string): boolean {
  return new RegExp(`^(?:${pattern})`).test(command);
}

/**
 * The one place that decides whether execute_command may run `command` (and `codexec run
 * --command`): first the policy rules for bash (the AG2 + MassGen sanitization and policy.json:
 * one rule engine), then the user's lists. Throws CommandBlockedError naming the rule or pattern
 * that decided. Checked on the whole command line as given, before anything is spawned. Rules
 * that `ask` are the approval gate's to act on, not this check's.
 */
export function checkCommand(command: string, lists: CommandLists, rules?: RuleSet): void {
  const verdict = rules && checkRules(command, 'bash', rules);
  if (verdict?.action === 'deny') {
    throw new CommandBlockedError(
      `command refused by policy rule ${verdict.rule}: ${verdict.description}. Nothing ran`,
      verdict.rule,
    );
  }
  const blocked = lists.blockedCommands?.find((pattern) => matchesFromStart(pattern, command));
  if (blocked !== undefined) {
    throw new CommandBlockedError(
      `command refused: it matches the blocked pattern ${JSON.stringify(blocked)} (CODEXEC_BLOCKED_COMMANDS)`,
      blocked,
    );
  }
  const allowed = lists.allowedCommands;
  if (allowed !== undefined && !allowed.some((pattern) => matchesFromStart(pattern, command))) {
    const which =
      allowed.length === 0
        ? 'the allowlist is empty, so no command may run'
        : `it matches none of the allowed patterns ${allowed.map((p) => JSON.stringify(p)).join(', ')}`;
    throw new CommandBlockedError(
      `command refused: ${which} (CODEXEC_ALLOWED_COMMANDS; patterns match from the start of the command)`,
      allowed.length === 0 ? '' : allowed.join('|'),
    );
  }
}
