import { CommandBlockedError } from '../errors/index.js';
import { checkRules, type RuleSet } from './rules.js';
import { parseShell, type SimpleCommand } from './shell/index.js';

/** The user's command lists (CODEXEC_ALLOWED_COMMANDS / CODEXEC_BLOCKED_COMMANDS). */
export interface CommandLists {
  /** undefined: every command passes this list; []: none does. */
  readonly allowedCommands?: readonly string[] | undefined;
  /** undefined or []: the user blocks nothing (the built-in rules still apply). */
  readonly blockedCommands?: readonly string[] | undefined;
}

/**
 * Python's `re.match`, as MassGen applies its lists: anchored at the start of the command only,
 * so `pytest.*` matches `pytest` and `pytest -v`, while `pytest .*` misses a bare `pytest`.
 * The group keeps an alternation (`ls|pwd`) anchored as a whole. Patterns are JavaScript syntax.
 */
export function matchesFromStart(pattern: string, command: string): boolean {
  return new RegExp(`^(?:${pattern})`).test(command);
}

/**
 * The one place that decides whether execute_command may run `command` (and `codexec run
 * --command`): first the policy rules for bash (the AG2 + MassGen sanitization and policy.json:
 * one rule engine), then the user's lists. Throws CommandBlockedError naming the rule or pattern
 * that decided, before anything is spawned. Rules that `ask` are the approval gate's to act on.
 */
export function checkCommand(command: string, lists: CommandLists, rules?: RuleSet): void {
  const verdict = rules && checkRules(command, 'bash', rules);
  if (verdict?.action === 'deny') {
    throw new CommandBlockedError(
      `command refused by policy rule ${verdict.rule}: ${verdict.description}. Nothing ran`,
      verdict.rule,
    );
  }
  checkBlocked(command, lists.blockedCommands ?? []);
  if (lists.allowedCommands !== undefined) checkAllowed(command, lists.allowedCommands);
}

/**
 * The lists apply to every simple command of the line, as the parser finds them (`ls; id` is two).
 * A blocked pattern refuses when it matches the whole line, or a simple command as written, as
 * bash reads it (quotes and escapes gone) or as the program it runs (wrappers and paths gone).
 * A line the parser cannot read is checked as a whole against the blocklist.
 */
function checkBlocked(command: string, blocked: readonly string[]): void {
  if (blocked.length === 0) return;
  const parsed = parseShell(command);
  const views = parsed.ok ? parsed.commands.flatMap((c) => [c.raw, c.words, c.program]) : [];
  for (const text of [command, ...views]) {
    const pattern = blocked.find((p) => matchesFromStart(p, text));
    if (pattern !== undefined) {
      throw new CommandBlockedError(
        `command refused: ${text === command ? 'it' : `its command \`${text}\``} matches the blocked ` +
          `pattern "${pattern}" (CODEXEC_BLOCKED_COMMANDS). Nothing ran`,
        pattern,
      );
    }
  }
}

/** Every simple command must match an allowed pattern as bash reads it; an unreadable line fails. */
function checkAllowed(command: string, allowed: readonly string[]): void {
  const refuse = (why: string) =>
    new CommandBlockedError(
      `command refused: ${why} (CODEXEC_ALLOWED_COMMANDS; each simple command of the line must match ` +
        'a pattern from its start). Nothing ran',
      allowed.join('|'),
    );
  if (allowed.length === 0) throw refuse('the allowlist is empty, so no command may run');
  const parsed = parseShell(command);
  if (!parsed.ok) throw refuse(`${parsed.reason}, so its commands cannot be checked`);
  const stray = parsed.commands.find(
    (c: SimpleCommand) => !allowed.some((p) => matchesFromStart(p, c.words)),
  );
  if (stray) {
    const patterns = allowed.map((p) => `"${p}"`).join(', ');
    throw refuse(`its command \`${stray.words}\` matches none of the allowed patterns ${patterns}`);
  }
}
