import { isIP } from 'node:net';
import type { ElicitRequestFormParams, InputRequiredResult } from '@modelcontextprotocol/server';
import { z } from 'zod';

export const DECISIONS = ['approve', 'deny', 'approve_trust_session'] as const;
export type Decision = (typeof DECISIONS)[number];

/**
 * Where trust given outside a session holds, as the form says it: `connection`, the one client of
 * a stdio server; `principal`, serve --http's, every request of that principal on any connection
 * (and any replica) until the server stops.
 */
export type TrustScope = 'connection' | 'principal';

/** What the person approving sees. */
export interface ApprovalForm {
  readonly tool: string;
  readonly language: string;
  readonly sessionId: string | null;
  readonly code: string;
  /** Code mode: what else the run may do (call these tools, ask the model). */
  readonly powers?: string | undefined;
  /** Where the code works: a new workspace, the command workspace, a session's, a host directory. */
  readonly place?: string | undefined;
  /** Why this run asks (every run asks, or the rule that asked). */
  readonly reason: string;
  readonly trustScope: TrustScope;
}

export type Answer =
  | { readonly kind: 'decided'; readonly decision: Exclude<Decision, 'deny'> }
  | { readonly kind: 'refused'; readonly why: string }
  /** 2026 era: return this from the handler; the client asks and retries the call. */
  | { readonly kind: 'pending'; readonly result: InputRequiredResult };

/** An answer read from the client (not the 2026-era "ask first" result). */
export type Reply = Exclude<Answer, { readonly kind: 'pending' }>;

/**
 * Tools a session's trust covers: code sent into its REPL (send_to_session, or execute_code and
 * run_script given the session) and installs into it.
 */
const SESSION_WIDE: ReadonlySet<string> = new Set([
  'send_to_session',
  'execute_code',
  'run_script',
  'install_package',
]);

/**
 * What `approve_trust_session` trusts from then on: a session (for the tools SESSION_WIDE names),
 * another tool in a session (start_process, write_file: that tool there alone), or a one-shot
 * tool with its language where the trust holds (TrustScope), in the place the form showed (trust given for a new
 * workspace is none for a host directory).
 */
export function trustKey(form: Pick<ApprovalForm, 'tool' | 'language' | 'sessionId' | 'place'>): string {
  if (!form.sessionId) return `${form.tool}:${form.language}${form.place ? `:${form.place}` : ''}`;
  return SESSION_WIDE.has(form.tool) ? `session:${form.sessionId}` : `session:${form.sessionId}:${form.tool}`;
}

/** The same, as the form tells the person approving. */
export function trustShown(form: ApprovalForm): string {
  if (!form.sessionId)
    return `trust ${form.tool} with ${form.language}${form.place ? ` in ${form.place}` : ''} ${scopeShown(form.trustScope)}`;
  return SESSION_WIDE.has(form.tool)
    ? `trust session ${form.sessionId} from now on`
    : `trust ${form.tool} in session ${form.sessionId} from now on`;
}

/** Where trust outside a session holds, in the form's words. */
function scopeShown(scope: TrustScope): string {
  return scope === 'principal'
    ? 'for this principal, on every connection, from now on until the server stops'
    : 'on this connection from now on';
}

const MAX_SHOWN_CHARS = 8000;
const answerSchema = z.object({ decision: z.enum(DECISIONS) });

/** What is asked: may this code run, or may the running code connect to a host off the allowlist. */
export type Question =
  | { readonly kind: 'run'; readonly form: ApprovalForm }
  | { readonly kind: 'host'; readonly form: HostForm };

/** What the person approving a connection sees: the host a running program asks for. */
export interface HostForm {
  readonly tool: string;
  readonly sessionId: string | null;
  readonly host: string;
  readonly port: number;
  readonly trustScope: TrustScope;
}

function hostFormParams(form: HostForm): ElicitRequestFormParams {
  const target = `${form.host}:${form.port}`;
  const trust = form.sessionId
    ? `allow ${target} in session ${form.sessionId} from now on`
    : `allow ${target} ${scopeShown(form.trustScope)}`;
  return {
    mode: 'form',
    message:
      `Code running in ${form.tool}${form.sessionId ? ` (session ${form.sessionId})` : ''} asks to connect ` +
      `to ${target}, which is not on the server's allowed list (CODEXEC_ALLOWED_DOMAINS).` +
      // No DNS answer may point an approved name inward (ask is before resolution).
      (isIP(form.host) === 0 ? ' Approved, the name reaches public addresses only.' : ''),
    requestedSchema: decisionSchema(
      `approve: allow it for this run; deny: refuse it; approve_trust_session: ${trust}`,
    ),
  };
}

/** The decision an elicitation's result carries, as a reply (anything but an approval refuses). */
export function read(action: string, content: Record<string, unknown> | undefined): Reply {
  if (action === 'decline') return { kind: 'refused', why: 'the client declined the approval request' };
  if (action !== 'accept') return { kind: 'refused', why: 'the approval request was cancelled' };
  const parsed = answerSchema.safeParse(content ?? {});
  if (!parsed.success) return { kind: 'refused', why: 'the answer had no valid decision' };
  if (parsed.data.decision === 'deny') return { kind: 'refused', why: 'denied by the user' };
  return { kind: 'decided', decision: parsed.data.decision };
}

/** The elicitation form that asks `question`. */
export function paramsOf(question: Question): ElicitRequestFormParams {
  return question.kind === 'run' ? formParams(question.form) : hostFormParams(question.form);
}

function formParams(form: ApprovalForm): ElicitRequestFormParams {
  const shown =
    form.code.length > MAX_SHOWN_CHARS
      ? `${form.code.slice(0, MAX_SHOWN_CHARS)}\n[... ${form.code.length - MAX_SHOWN_CHARS} more characters ...]`
      : form.code;
  const trust = trustShown(form);
  return {
    mode: 'form',
    message:
      `codexec asks to run ${form.language} code.\n` +
      `Tool: ${form.tool}\nLanguage: ${form.language}\nSession: ${form.sessionId ?? 'none (one-shot)'}\n` +
      (form.place ? `Runs in: ${form.place}\n` : '') +
      (form.powers ? `The code may also: ${form.powers}\n` : '') +
      `Why you are asked: ${form.reason}\n\n${shown}`,
    requestedSchema: decisionSchema(
      `approve: run it once; deny: do not run it; approve_trust_session: run it and ${trust}`,
    ),
  };
}

/** The form's one field: a decision among DECISIONS, each explained. */
function decisionSchema(description: string): ElicitRequestFormParams['requestedSchema'] {
  return {
    type: 'object',
    properties: { decision: { type: 'string', title: 'Decision', description, enum: [...DECISIONS] } },
    required: ['decision'],
  };
}
