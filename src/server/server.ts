import { createRequire } from 'node:module';
import { McpServer } from '@modelcontextprotocol/server';
import type { Services } from './services.js';
import { registerExecuteCode } from './tools/execute-code.js';
import { registerExecuteCommand } from './tools/execute-command.js';
import { registerLogTools } from './tools/logs.js';
import { registerPackageTools } from './tools/packages.js';
import { registerScriptTools } from './tools/scripts.js';
import { registerSessionTools } from './tools/sessions.js';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
export const VERSION = version;

const INSTRUCTIONS =
  'codexec runs Python, JavaScript (node), TypeScript and Bash for you in a sandbox. Use execute_code ' +
  'for one-shot programs. Results report stdout, stderr, exit_code and created files (artifacts).';

/** Build one MCP server instance over the shared services (one per connection / era). */
export function createServer(services: Services): McpServer {
  const server = new McpServer(
    { name: 'codexec', version },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );
  registerExecuteCode(server, services);
  registerExecuteCommand(server, services);
  registerScriptTools(server, services);
  registerSessionTools(server, services);
  registerPackageTools(server, services);
  registerLogTools(server, services);
  return server;
}
