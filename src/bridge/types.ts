/**
 * Code mode's seam: the bridge to downstream MCP servers, as the sandbox
 * channel sees it. `src/bridge/` implements it (downstream clients, allowlists, discovery, cache,
 * breaker, rate limit, queue); `src/codemode/` carries calls from sandboxed code to it.
 */

/** One downstream tool, named `mcp__<server>__<tool>`. */
export interface ToolInfo {
  readonly name: string;
  readonly server: string;
  /** The tool's own name on its server. */
  readonly tool: string;
  readonly description: string;
  /** JSON Schema of the arguments, as the downstream server lists it. */
  readonly inputSchema: Record<string, unknown>;
  readonly outputSchema?: Record<string, unknown> | undefined;
}

/** What `tool_calls` in results, log entries and audit entries carry, one per call. */
export interface ToolCallRecord {
  readonly tool: string;
  readonly success: boolean;
  readonly duration_ms: number;
  readonly error?: string | undefined;
}

/** Calls past the first CODEXEC_MAX_TOOL_CALL_RECORDS, counted per tool and outcome. */
export interface ToolCallCount {
  /** The tool, or `*` for every tool past the first 100 distinct ones. */
  readonly tool: string;
  readonly success: boolean;
  readonly count: number;
}

/** A run's calls: the first ones in full, the rest counted. */
export interface ToolCallLog {
  readonly calls: ToolCallRecord[];
  readonly omitted: ToolCallCount[];
}

/** What a downstream tool answered (its CallToolResult, passed through). */
export interface ToolCallOutcome {
  readonly content: readonly unknown[];
  readonly structuredContent?: Record<string, unknown> | undefined;
  readonly isError?: boolean | undefined;
}

export interface BridgeRunOptions {
  /** `allowed_tools`: names with `*` wildcards; empty = no call allowed (discovery still works). */
  readonly allowedTools: readonly string[];
  /**
   * The caller asked for code mode (allowed_tools or enable_sampling): its result carries
   * tool_calls even when no call was made. Otherwise (discovery that every run has) only when one was.
   */
  readonly explicit?: boolean | undefined;
  /** Aborted when the run ends (timeout, cancel, session close): pending calls reject at once. */
  readonly signal: AbortSignal;
}

/**
 * One run's (or one session's) view of the bridge: its allowlist, its rate limit, and the record of
 * its calls. Every method rejects with a BridgeError whose message is fit to show the code.
 */
export interface BridgeRun {
  /** Allowlist, then the cached input schema, then rate limit, queue and breaker; then the call. */
  call(name: string, args: Record<string, unknown>): Promise<ToolCallOutcome>;
  /** Every tool of every server (the allowlist does not filter discovery), optionally filtered. */
  discover(search?: string): Promise<ToolInfo[]>;
  /** Ranked by name and description match, best first. */
  search(query: string, limit?: number): Promise<ToolInfo[]>;
  schema(name: string): Promise<ToolInfo>;
  /**
   * The calls made since the last take, in order (the first CODEXEC_MAX_TOOL_CALL_RECORDS in full,
   * the rest counted); undefined when none was made and the run was not `explicit`.
   */
  takeCalls(): ToolCallLog | undefined;
}

export interface ServerHealth {
  readonly name: string;
  readonly transport: 'stdio' | 'http';
  readonly connected: boolean;
  readonly circuit: 'closed' | 'open' | 'half-open';
  /** Known tools (from the cache when not connected); null when never listed. */
  readonly tools: number | null;
  readonly error?: string | undefined;
}

export interface Bridge {
  /** Whether any downstream server is configured (then every run of python, node and typescript has discovery). */
  readonly configured: boolean;
  openRun(options: BridgeRunOptions): BridgeRun;
  health(): ServerHealth[];
  /** Close every downstream client (and the processes of stdio servers). */
  close(): Promise<void>;
}
