import type { AuditSink } from '../policy/index.js';
import type { ChainsReport } from './postgres/report.js';
import type { VerifyReport } from './sqlite/verify.js';

/** An audit entry as a viewer shows it (the chain's fields, less the hashes). */
export interface AuditRow {
  readonly at: string;
  readonly principal: string | null;
  readonly tool: string;
  readonly runtime: string;
  readonly execution_id: string | null;
  readonly session_id: string | null;
  readonly input_code: string;
  readonly exit_code: number | null;
  readonly approved: boolean;
  readonly approved_by: string | null;
  /** The dashboard's approver, when one decided (absent otherwise). */
  readonly decided_by?: string;
  readonly rule: string | null;
}

/** How much of an entry's code the view shows. */
export const VIEW_CODE_CHARS = 300;

/** The fields a viewer shows of an entry, its code cut short. */
export function viewOf(entry: AuditRow): AuditRow {
  const { at, tool, runtime, execution_id, session_id, input_code, exit_code, approved, approved_by, rule } =
    entry;
  return {
    at,
    principal: entry.principal ?? null,
    tool,
    runtime,
    execution_id,
    session_id,
    input_code: input_code.slice(0, VIEW_CODE_CHARS),
    exit_code,
    approved,
    approved_by,
    ...(entry.decided_by !== undefined && { decided_by: entry.decided_by }),
    rule,
  };
}

/** What `verify()` found: the files' report (one chain) or the postgres chains' (one per replica). */
export type AuditReport = VerifyReport | ChainsReport;

/**
 * The audit trail as the server uses it, whichever store keeps it: the daily JSONL files
 * (AuditTrail) or PostgreSQL, one chain per replica (PgAuditTrail). src/records chooses one.
 */
export interface AuditLog extends AuditSink {
  /** Resolves when every entry recorded so far is stored (or has failed, and said so). */
  flush(): Promise<void>;
  /** Flush and let go of what the trail holds (the files' lock and anchor). */
  close(): Promise<void>;
  /** `codexec audit verify` over the whole trail: every chain, HMAC and anchor. */
  verify(): Promise<AuditReport>;
  /** The newest `max` entries `principal` may see (undefined: everyone's), newest first. */
  recent(principal: string | undefined, max: number): Promise<AuditRow[]>;
}
