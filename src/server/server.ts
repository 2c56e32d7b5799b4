import { McpServer } from '@modelcontextprotocol/server';
import { ApprovalAsker } from '../approvals/index.js';
import type { Config } from '../config/index.js';
import { PACKAGE_VERSION } from '../util/index.js';
import { linkViews, registerViews, showsApps } from './apps.js';
import { onCallStream } from './call-stream.js';
import { serveLogs } from './client-log.js';
import { markStdio } from './connection.js';
import { selectTools } from './define-tool.js';
import { Gatekeeper } from './guard.js';
import { registerResources } from './resources.js';
import type { Services } from './services.js';
import { registerTaskMethods } from './task-methods.js';
import { currentTaskRun, readTaskParams, TASKS_EXTENSION } from './tasks.js';
import { registerAnswerApproval } from './tools/answer-approval.js';
import { registerExecuteCode } from './tools/execute-code.js';
import { registerExecuteCommand } from './tools/execute-command.js';
import { registerFileTools } from './tools/files.js';
import { registerHealthTool } from './tools/health.js';
import { allowedLanguages } from './tools/languages.js';
import { registerLogTools } from './tools/logs.js';
import { registerPackageTools } from './tools/packages.js';
import { registerProcessTools } from './tools/processes.js';
import { registerScriptTools } from './tools/scripts.js';
import { registerSessionTools } from './tools/sessions.js';
import { traceToolCalls } from './traced.js';

export const VERSION = PACKAGE_VERSION;

const NAMES: Record<string, string> = {
  python: 'Python',
  node: 'JavaScript (node)',
  typescript: 'TypeScript',
  bash: 'Bash',
};

/**
 * What the model is told at initialize / discovery: what it can do, when to, and to say what ran.
 * Kept short: clients put it in context.
 */
export function instructions(config: Config): string {
  if (!config.gate.enabled) {
    return (
      'codexec: code execution is switched off on this server (CODEXEC_ENABLED=false). You can still read ' +
      'saved scripts and search past executions.'
    );
  }
  const languages = allowedLanguages(config).map((language) => NAMES[language] ?? language);
  // Only the tools CODEXEC_TOOLS registers are named.
  const has = (tool: string) => config.codemode.tools?.includes(tool) ?? true;
  const uses = [
    'execute_code for one-shot programs',
    ...(has('start_session') ? ['sessions for multi-step work'] : []),
    ...(has('execute_command') && config.gate.allowedRuntimes.includes('bash')
      ? ['execute_command for command lines (tests, builds) in a persistent workspace']
      : []),
    ...(has('save_script') ? ['saved scripts for reuse'] : []),
  ];
  const approval =
    config.gate.approval === 'ask'
      ? ' Every run asks the user for approval first; a denied run is refused and did not run.'
      : config.gate.approval === 'risky'
        ? ' Runs that a policy rule marks risky ask the user first; a denied run is refused and did not run.'
        : '';
  const codeMode = config.codemode.mcpConfig
    ? ' To use the tools of other MCP servers, give execute_code allowed_tools (e.g. ["mcp__<server>__*"]) and ' +
      'call them from the code: discoverMCPTools/searchTools find them (in any run), callMCPTool calls them (python: await ' +
      'discover_mcp_tools(), await call_mcp_tool(name, args)).'
    : '';
  return (
    `codexec runs ${languages.join(', ')} code in a sandbox: ${uses.join(', ')}. Prefer an existing tool when one fits; ` +
    'use code for computation, data transformation and file processing. Explain what the code will do ' +
    'before running it. Afterwards report what ran and what it showed (what passed, what failed, the key output) and ' +
    'list files it created by path instead of pasting them. On failure read stderr, then fix and retry ' +
    `or report it.${codeMode}${approval}`
  );
}

/**
 * Build one MCP server instance over the shared services: one per connection, with its own trust.
 * `stdio`: the one connection of a stdio server (its log lines outside tool calls may go to it).
 */
export function createServer(services: Services, { stdio = false } = {}): McpServer {
  const { config } = services;
  const server = new McpServer(
    { name: 'codexec', version: VERSION },
    {
      capabilities: {
        // No `tools` or `resources` here: given, McpServer would set their handlers in its
        // constructor, before readTaskParams and linkViews can wrap them; the first registerTool
        // and registerResource declare them instead.
        // The server's own log lines as notifications/message (client-log.ts).
        logging: {},
        // Both eras' tasks: the 2026 extension, the 2025-11-25 capability (the 2026 era drops it).
        extensions: { [TASKS_EXTENSION]: {} },
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
      },
      instructions: instructions(config),
    },
  );
  readTaskParams(server);
  linkViews(server);
  if (stdio) markStdio(server);
  serveLogs(server, services.secrets);
  if (services.tracing) traceToolCalls(server, services.tracing);
  selectTools(server, config.codemode.tools, config.codemode.compact);
  const gate = new Gatekeeper(
    services,
    new ApprovalAsker(
      server,
      config.gate.approvalTimeoutMs,
      services.approvalKey,
      currentTaskRun,
      onCallStream,
      services.spentTickets,
      { board: services.viewApprovals, shows: (ctx) => showsApps(server, ctx) },
    ),
    services.trusted,
  );
  if (config.gate.enabled) registerExecuteCode(server, services, gate);
  if (config.gate.enabled) registerExecuteCommand(server, services, gate);
  registerScriptTools(server, services, gate);
  registerSessionTools(server, services, gate);
  registerProcessTools(server, services, gate);
  registerPackageTools(server, services, gate);
  registerLogTools(server, services);
  registerFileTools(server, services, gate);
  registerHealthTool(server, services);
  if (config.gate.enabled) registerAnswerApproval(server, services);
  registerResources(server, services);
  registerViews(server);
  registerTaskMethods(server, services.tasks, config.gate.approvalTimeoutMs);
  return server;
}
