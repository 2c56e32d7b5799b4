// The bound on a run's tool-call records (src/bridge/records.ts), in process: the first N calls in
// full, then counts per tool and outcome, at most 100 distinct ones, the rest under tool "*"; a
// session's sends are recorded each apart (takeCalls starts afresh).
import { describe, expect, it } from 'vitest';
import { McpBridge, OTHER_TOOLS } from '../../src/bridge/index.js';

describe('tool-call records', () => {
  it('keeps the first N, counts the rest, and folds tools past 100 distinct ones into "*"', async () => {
    const bridge = new McpBridge(new Map(), { rateLimitPerMinute: 100_000, maxToolCallRecords: 2 });
    const run = bridge.openRun({ allowedTools: [], signal: new AbortController().signal });
    const names = Array.from({ length: 152 }, (_, i) => `mcp__s__t${i}`);
    for (const name of [...names, 'mcp__s__t5']) await run.call(name, {}).catch(() => {});
    const log = run.takeCalls();
    expect(log?.calls.map((call) => call.tool)).toEqual(['mcp__s__t0', 'mcp__s__t1']);
    expect(log?.omitted).toHaveLength(101);
    expect(log?.omitted.find((group) => group.tool === 'mcp__s__t5')).toEqual({
      tool: 'mcp__s__t5',
      success: false,
      count: 2,
    });
    expect(log?.omitted.at(-1)).toEqual({ tool: OTHER_TOOLS, success: false, count: 50 });
    // Nothing since: a run that was not asked for code mode reports nothing.
    expect(run.takeCalls()).toBeUndefined();
  });
});
