import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadMcpConfig, McpBridge, pythonModule, type ToolInfo, typescriptModule } from '../bridge/index.js';
import { CodexecError } from '../errors/index.js';
import { configOrExit } from './config.js';

export interface WrappersFlags {
  readonly lang: string;
  readonly out: string;
  readonly server?: string;
}

/**
 * `codexec wrappers`: one typed module per downstream server of CODEXEC_MCP_CONFIG, from the tools
 * it lists (or the tool cache). Exit 0 with the files written, 2 when there is nothing to do it for.
 */
export async function wrappersCommand(flags: WrappersFlags): Promise<void> {
  const fail = (message: string): never => {
    process.stderr.write(`codexec wrappers: ${message}\n`);
    process.exit(2);
  };
  if (flags.lang !== 'ts' && flags.lang !== 'python') fail(`--lang: ts or python, not ${flags.lang}`);
  const config = configOrExit();
  if (!config.codemode.mcpConfig) {
    fail('no downstream MCP servers: set CODEXEC_MCP_CONFIG, or write $CODEXEC_HOME/mcp.json');
  }
  let bridge: McpBridge;
  try {
    bridge = new McpBridge(loadMcpConfig(config.codemode.mcpConfig as string), {
      rateLimitPerMinute: config.codemode.rateLimitPerMinute,
      cacheFile: join(config.home, 'cache', 'mcp-tools.json'),
    });
  } catch (error) {
    if (error instanceof CodexecError) fail(error.message);
    throw error;
  }
  try {
    const tools = await bridge.openRun({ allowedTools: [], signal: new AbortController().signal }).discover();
    const byServer = new Map<string, ToolInfo[]>();
    for (const tool of tools) byServer.set(tool.server, [...(byServer.get(tool.server) ?? []), tool]);
    if (flags.server && !byServer.has(flags.server)) fail(`no tools from a server named ${flags.server}`);
    const out = resolve(flags.out);
    mkdirSync(out, { recursive: true });
    for (const [server, list] of byServer) {
      if (flags.server && server !== flags.server) continue;
      const file = join(out, `${server}.${flags.lang === 'ts' ? 'ts' : 'py'}`);
      writeFileSync(file, flags.lang === 'ts' ? typescriptModule(server, list) : pythonModule(server, list));
      process.stdout.write(`${file}: ${list.length} tools\n`);
    }
    if (byServer.size === 0) fail('no server could be reached, and none is in the tool cache');
  } finally {
    await bridge.close();
  }
}
