import { BridgeError } from './errors.js';
import { CallRecorder } from './records.js';
import type { BridgeRun, BridgeRunOptions, ToolCallLog, ToolCallOutcome, ToolInfo } from './types.js';

// One run's (or session's) view of the bridge: its allowlist, its rate limit, the record of its
// calls. Every call takes a slot of the per-minute limit, a refused one too; past the limit the
// refusals are answered one after another, each after a pause (until a slot frees, at most
// THROTTLE_MS), so code that loops on refusals, or fires them all at once, gets about one a second
// instead of keeping the server busy answering it.

const THROTTLE_MS = 1000;

/** What a run needs of the bridge (McpBridge). */
export interface RunHost {
  tools(): Promise<ToolInfo[]>;
  call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolCallOutcome>;
  schema(name: string): Promise<ToolInfo>;
}

/** allowed_tools entries are names with `*` wildcards (any characters, none too). */
export function allows(patterns: readonly string[], name: string): boolean {
  return compile(patterns)(name);
}

function compile(patterns: readonly string[]): (name: string) => boolean {
  if (patterns.length === 0) return () => false;
  const source = patterns
    .map((pattern) =>
      pattern
        .split('*')
        .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*'),
    )
    .join('|');
  const regex = new RegExp(`^(?:${source})$`);
  return (name) => regex.test(name);
}

export class Run implements BridgeRun {
  private readonly recorder: CallRecorder;
  private readonly recent: number[] = [];
  private readonly allowed: (name: string) => boolean;
  private made = 0;
  /** The last refusal waiting for its turn past the limit: the next waits for it, then its pause. */
  private throttled: Promise<void> = Promise.resolve();

  constructor(
    private readonly bridge: RunHost,
    private readonly options: BridgeRunOptions,
    private readonly perMinute: number,
    maxRecords: number,
  ) {
    this.recorder = new CallRecorder(maxRecords);
    this.allowed = compile(options.allowedTools);
  }

  async call(name: string, args: Record<string, unknown>): Promise<ToolCallOutcome> {
    const started = Date.now();
    this.made += 1;
    try {
      const allowed = this.allowed(name);
      while (this.recent.length > 0 && (this.recent[0] as number) <= started - 60_000) this.recent.shift();
      if (this.recent.length >= this.perMinute) {
        await this.pause();
        if (allowed) {
          throw new BridgeError(
            'RATE_LIMITED',
            `${name}: this run made ${this.perMinute} calls within a minute, the limit (CODEXEC_BRIDGE_RATE_LIMIT)`,
          );
        }
      } else this.recent.push(started);
      if (!allowed) {
        throw new BridgeError(
          'TOOL_NOT_ALLOWED',
          `tool ${name} is not allowed for this run (allowed_tools: ${JSON.stringify(this.options.allowedTools)})`,
        );
      }
      const outcome = await this.bridge.call(name, args, this.options.signal);
      this.recorder.add({
        tool: name,
        success: outcome.isError !== true,
        duration_ms: Date.now() - started,
        ...(outcome.isError === true && { error: textOf(outcome) }),
      });
      return outcome;
    } catch (error) {
      this.recorder.add({
        tool: name,
        success: false,
        duration_ms: Date.now() - started,
        error: (error as Error).message,
      });
      throw error;
    }
  }

  /** After the refusals before it: until the oldest call leaves the window (at most THROTTLE_MS). */
  private pause(): Promise<void> {
    this.throttled = this.throttled.then(() => this.sleep());
    return this.throttled;
  }

  /** The pause of one refusal past the limit; none once the run has ended. */
  private sleep(): Promise<void> {
    const { signal } = this.options;
    if (signal.aborted) return Promise.resolve();
    const now = Date.now();
    const wait = Math.min(THROTTLE_MS, Math.max(0, (this.recent[0] ?? now) + 60_000 - now));
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, wait);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  async discover(search?: string): Promise<ToolInfo[]> {
    const tools = await this.bridge.tools();
    if (!search) return tools;
    const terms = search.toLowerCase().split(/\s+/).filter(Boolean);
    return tools.filter((tool) =>
      terms.every((term) => `${tool.name} ${tool.description}`.toLowerCase().includes(term)),
    );
  }

  async search(query: string, limit = 10): Promise<ToolInfo[]> {
    const terms = query.toLowerCase().split(/\s+/).filter(Boolean);
    const scored = (await this.bridge.tools())
      .map((tool) => {
        const name = tool.name.toLowerCase();
        const description = tool.description.toLowerCase();
        let score = 0;
        for (const term of terms) {
          if (tool.tool.toLowerCase() === term) score += 10;
          else if (name.includes(term)) score += 5;
          if (description.includes(term)) score += 1;
        }
        return { tool, score };
      })
      .filter((entry) => entry.score > 0);
    scored.sort((a, b) => b.score - a.score || a.tool.name.localeCompare(b.tool.name));
    return scored.slice(0, Math.max(1, limit)).map((entry) => entry.tool);
  }

  schema(name: string): Promise<ToolInfo> {
    return this.bridge.schema(name);
  }

  takeCalls(): ToolCallLog | undefined {
    const made = this.made;
    this.made = 0;
    return made > 0 || this.options.explicit ? this.recorder.take() : undefined;
  }
}

/** The text items of an outcome, joined. */
export function textOf(outcome: ToolCallOutcome): string {
  return outcome.content
    .map((item) =>
      (item as { type?: string; text?: string }).type === 'text' ? (item as { text: string }).text : '',
    )
    .join('\n');
}
