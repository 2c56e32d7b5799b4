import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../../errors/index.js';
import { expandHome } from '../../util/index.js';
import { CODEMODE_TOOLS, TOOL_NAMES } from '../tools.js';
import { from, setting } from './define.js';
import { int, splitCommas } from './values.js';

// Which tools are registered, and code mode: the downstream MCP servers and how much a run may
// call them.

const tools = setting('CODEXEC_TOOLS', () =>
  z
    .string()
    .trim()
    .min(1)
    .default('all')
    .describe('Which tools to register: all, codemode (execute_code and health), or a comma list of names.'),
);
const mcpConfig = setting('CODEXEC_MCP_CONFIG', () =>
  z
    .string()
    .min(1)
    .optional()
    .describe(
      'Code mode: the mcpServers file of downstream MCP servers; default $CODEXEC_HOME/mcp.json if it exists.',
    ),
);

export const codemode = {
  codemode: {
    /** The tools to register (undefined: all of them). */
    tools: from([tools], ([value]) => toolList(value)),
    /** CODEXEC_TOOLS=codemode: short descriptions and no output schemas, to keep tools/list small. */
    compact: from([tools], ([value]) => value === 'codemode'),
    /** The downstream MCP servers' file (undefined: none configured). */
    mcpConfig: from([mcpConfig], ([value], context) => {
      if (value) return expandHome(value, context.home);
      // Code mode is off without a file: the default one counts only where it exists.
      const fallback = join(context.root, 'mcp.json');
      return existsSync(fallback) ? fallback : undefined;
    }),
    rateLimitPerMinute: setting('CODEXEC_BRIDGE_RATE_LIMIT', () =>
      int(1, 100_000)
        .default(60)
        .describe('Code mode: downstream tool calls one run may make per minute (refused ones count too).'),
    ),
    /** Calls recorded in full per run (or send); the rest are counted. */
    maxToolCallRecords: setting('CODEXEC_MAX_TOOL_CALL_RECORDS', () =>
      int(0, 100_000)
        .default(100)
        .describe(
          'Code mode: tool calls a result, log entry and audit entry record in full; the rest are counted per tool and outcome.',
        ),
    ),
  },
};

/** CODEXEC_TOOLS as names, or undefined for all of them; an unknown name stops start-up. */
function toolList(value: string): string[] | undefined {
  if (value === 'all') return undefined;
  if (value === 'codemode') return [...CODEMODE_TOOLS];
  const names = splitCommas(value);
  const unknown = names.filter((name) => !(TOOL_NAMES as readonly string[]).includes(name));
  if (unknown.length > 0) {
    throw new ConfigError(
      `CODEXEC_TOOLS: no tool ${unknown.join(', ')} (all, codemode, or of: ${TOOL_NAMES.join(', ')})`,
    );
  }
  return names;
}
