import type { ApprovalMode } from '../config/index.js';
import {
  type CodexecError,
  CommandBlockedError,
  PolicyDeniedError,
  RuntimeNotAllowedError,
} from '../errors/index.js';
import { type CommandLists, checkCommand } from './commands.js';
import { checkRules, type RuleSet, SHELL_LANGUAGES } from './rules.js';
import { loadShellParser } from './shell/index.js';

/** What the gate needs to know of the server's settings. */
export interface GatePolicy {
  readonly approval: ApprovalMode;
  readonly allowedRuntimes: readonly string[];
  readonly rules: RuleSet;
  /** execute_command's allow/deny lists (CODEXEC_ALLOWED_COMMANDS / CODEXEC_BLOCKED_COMMANDS). */
  readonly commands?: CommandLists;
}

export interface GateRequest {
  readonly tool: string;
  /** The language the rules are chosen by (install_package: python or node). */
  readonly language: string;
  /** The code, command or package spec the rules read. */
  readonly code: string;
  /** Runtimes any one of which makes the request allowed; default: [language]. */
  readonly runtimes?: readonly string[];
}

export type GateDecision =
  /** Run without asking: `auto` mode or no rule asked (`auto`), or an `allow` rule decided (`policy`). */
  | { readonly kind: 'run'; readonly approvedBy: 'auto' | 'policy'; readonly rule: string | null }
  /** Ask the client first (or find the run trusted). */
  | { readonly kind: 'ask'; readonly rule: string | null; readonly reason: string }
  | { readonly kind: 'refuse'; readonly error: CodexecError; readonly rule: string | null };

/** Tools whose code is a command line: the command lists (CODEXEC_ALLOWED_COMMANDS…) apply. */
const COMMAND_TOOLS: readonly string[] = ['execute_command', 'start_process'];

/** Load what decide() needs for this request: the shell parser (once) for commands and shell code. */
export async function prepareDecision(request: GateRequest): Promise<void> {
  if (COMMAND_TOOLS.includes(request.tool) || SHELL_LANGUAGES.includes(request.language)) {
    await loadShellParser();
  }
}

/**
 * The one decision before anything is created: is the runtime allowed, what do the rules say,
 * does the run need the client's approval. Pure (after prepareDecision): asking and trust live in the server layer,
 * which has the connection. `auto` never asks (it approves every run), so there an `ask`
 * rule only names itself in the audit; `risky` asks exactly for those; `ask` asks for every run
 * an `allow` rule does not wave through. A `deny` rule refuses in every mode.
 */
export function decide(request: GateRequest, policy: GatePolicy): GateDecision {
  if (request.tool === 'write_file') return decideWrite(request, policy);
  const refused = runtimeRefusal(request.language, policy.allowedRuntimes, request.runtimes);
  if (refused) return { kind: 'refuse', rule: null, error: refused };
  if (COMMAND_TOOLS.includes(request.tool)) {
    // A command's deny rules and lists refuse with COMMAND_BLOCKED (MassGen's contract).
    try {
      checkCommand(request.code, policy.commands ?? {}, policy.rules);
    } catch (error) {
      if (!(error instanceof CommandBlockedError)) throw error;
      return { kind: 'refuse', rule: error.pattern || null, error };
    }
  }
  const verdict = checkRules(request.code, request.language, policy.rules);
  if (verdict?.action === 'deny') {
    return {
      kind: 'refuse',
      rule: verdict.rule,
      error: new PolicyDeniedError(
        `refused by policy rule ${verdict.rule}: ${verdict.description}. Nothing ran. Rules guard against ` +
          'accidents; if this was intended, the server owner can change the rule in policy.json',
        verdict.rule,
      ),
    };
  }
  const rule = verdict?.rule ?? null;
  if (verdict?.action === 'allow') return { kind: 'run', approvedBy: 'policy', rule };
  if (policy.approval === 'ask') return { kind: 'ask', rule, reason: 'every run needs approval here' };
  if (policy.approval === 'risky' && verdict?.action === 'ask') {
    return { kind: 'ask', rule, reason: `policy rule ${verdict.rule}: ${verdict.description}` };
  }
  return { kind: 'run', approvedBy: 'auto', rule };
}

/**
 * write_file runs nothing, but changes what code will see (a planted `statistics.py` imported by
 * an approved cell): it asks as code does — every write under `ask`, one whose content a
 * rule flags (any action but allow) under `risky` — and is never refused by a rule.
 */
function decideWrite(request: GateRequest, policy: GatePolicy): GateDecision {
  const verdict = checkRules(request.code, request.language, policy.rules);
  const rule = verdict?.rule ?? null;
  if (policy.approval === 'ask') return { kind: 'ask', rule, reason: 'every write needs approval here' };
  if (policy.approval === 'risky' && verdict && verdict.action !== 'allow') {
    return { kind: 'ask', rule, reason: `policy rule ${verdict.rule}: ${verdict.description}` };
  }
  return { kind: 'run', approvedBy: 'auto', rule };
}

/** The RUNTIME_NOT_ALLOWED error for a language none of whose runtimes is allowed, else undefined. */
export function runtimeRefusal(
  language: string,
  allowedRuntimes: readonly string[],
  runtimes: readonly string[] = [language],
): RuntimeNotAllowedError | undefined {
  if (runtimes.some((runtime) => allowedRuntimes.includes(runtime))) return undefined;
  return new RuntimeNotAllowedError(
    `${language} is not an allowed runtime here (CODEXEC_ALLOWED_RUNTIMES=${allowedRuntimes.join(',')}); ` +
      'use one of those languages',
  );
}
