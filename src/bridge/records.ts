import type { ToolCallCount, ToolCallLog, ToolCallRecord } from './types.js';

// The record of a run's tool calls, bounded like everything a caller can grow: the
// first `max` in full, then only counts per tool and outcome. A loop of 139,312 calls once made a
// 44 MB result (past the SDK client's 10 MiB line), 21 MB log and audit lines and a 10 s stall.

/** Distinct (tool, outcome) counts kept; calls to any further tool are counted under OTHER. */
const MAX_GROUPS = 100;
/** The tool name of the count that stands for every tool past MAX_GROUPS. */
export const OTHER_TOOLS = '*';
/** A record's error is cut to this (a refusal names the whole allowed_tools list). */
const ERROR_CHARS = 500;

export class CallRecorder {
  private calls: ToolCallRecord[] = [];
  private omitted = new Map<string, { readonly tool: string; readonly success: boolean; count: number }>();

  constructor(private readonly max: number) {}

  add(record: ToolCallRecord): void {
    if (this.calls.length < this.max) {
      const error = record.error;
      this.calls.push(
        error && error.length > ERROR_CHARS ? { ...record, error: error.slice(0, ERROR_CHARS) } : record,
      );
      return;
    }
    let tool = record.tool;
    if (!this.omitted.has(key(tool, record.success)) && this.omitted.size >= MAX_GROUPS) tool = OTHER_TOOLS;
    const group = this.omitted.get(key(tool, record.success));
    if (group) group.count += 1;
    else this.omitted.set(key(tool, record.success), { tool, success: record.success, count: 1 });
  }

  /** The calls since the last take, and a fresh start (a session's sends are recorded each apart). */
  take(): ToolCallLog {
    const log = { calls: this.calls, omitted: [...this.omitted.values()] as ToolCallCount[] };
    this.calls = [];
    this.omitted = new Map();
    return log;
  }
}

const key = (tool: string, success: boolean) => `${success ? '+' : '-'}${tool}`;

/** A log's fields in results, log entries and audit entries: `tool_calls_omitted` only when some were. */
export function toolCallFields(log: ToolCallLog): {
  tool_calls: ToolCallRecord[];
  tool_calls_omitted?: ToolCallCount[];
} {
  return { tool_calls: log.calls, ...(log.omitted.length > 0 && { tool_calls_omitted: log.omitted }) };
}
