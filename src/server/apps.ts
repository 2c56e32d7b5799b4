// MCP Apps: the result view the four tools that run code link to (`_meta.ui.resourceUri`), served
// as a ui:// resource, and shown only to a client that declared the extension: every other client
// sees today's tools/list and resources/list, byte for byte, and the same results.
import { readFile } from 'node:fs/promises';
import {
  EXTENSION_ID,
  getUiCapability,
  RESOURCE_MIME_TYPE,
  registerAppResource,
} from '@modelcontextprotocol/ext-apps/server';
import type { McpServer, ServerContext } from '@modelcontextprotocol/server';
import { clientCapabilities } from '../approvals/index.js';
import { packagePath } from '../util/index.js';

export { EXTENSION_ID as APPS_EXTENSION };

/** The view of a run: its output, pictures, tables, files and error; its approval while it waits. */
export const RESULT_VIEW = 'ui://codexec/view';
/** The tools whose calls the view shows. */
export const VIEWED_TOOLS: ReadonlySet<string> = new Set([
  'execute_code',
  'send_to_session',
  'run_script',
  'execute_command',
]);
/** What only the view calls (hosts keep it from the model): answer_approval. */
export const VIEW_ONLY_TOOLS: ReadonlySet<string> = new Set(['answer_approval']);

/** Whether the client of this request declared MCP Apps with HTML views. */
export function showsApps(server: McpServer, ctx: ServerContext): boolean {
  return getUiCapability(clientCapabilities(server, ctx))?.mimeTypes?.includes(RESOURCE_MIME_TYPE) === true;
}

type Handler = (request: unknown, ctx: ServerContext) => Promise<unknown>;
interface Listed {
  readonly tools?: Array<{ name: string; _meta?: Record<string, unknown> }>;
  readonly resources?: Array<{ uri: string }>;
}

/**
 * Links the views in tools/list and resources/list for a client that shows apps (the extension:
 * a server checks the client's capabilities before it advertises them), and leaves them out
 * otherwise. Through the Server's wrapping hook, as readTaskParams: call before any tool or
 * resource is registered.
 */
export function linkViews(server: McpServer): void {
  const inner = server.server as unknown as { _wrapHandler(method: string, handler: Handler): Handler };
  const wrap = inner._wrapHandler.bind(inner);
  inner._wrapHandler = (method, handler) => {
    if (method !== 'tools/list' && method !== 'resources/list') return wrap(method, handler);
    return wrap(method, async (request, ctx) => {
      const listed = (await handler(request, ctx)) as Listed;
      return showsApps(server, ctx) ? linked(listed) : unlinked(listed);
    });
  };
}

function linked(listed: Listed): Listed {
  if (!listed.tools) return listed;
  const tools = listed.tools.map((tool) => {
    const only = VIEW_ONLY_TOOLS.has(tool.name);
    if (!only && !VIEWED_TOOLS.has(tool.name)) return tool;
    // Not the deprecated flat `ui/resourceUri` too: tools/list stays within its 24 KB.
    const ui = only ? { visibility: ['app'] } : { resourceUri: RESULT_VIEW };
    return { ...tool, _meta: { ...tool._meta, ui } };
  });
  return { ...listed, tools };
}

function unlinked(listed: Listed): Listed {
  if (listed.tools)
    return { ...listed, tools: listed.tools.filter((tool) => !VIEW_ONLY_TOOLS.has(tool.name)) };
  if (listed.resources)
    return { ...listed, resources: listed.resources.filter((resource) => !resource.uri.startsWith('ui://')) };
  return listed;
}

/**
 * The view's HTML (built by scripts/build-web.mjs: one file, its script and style inline), read
 * once. Its CSP is the extension's restrictive default: nothing loads from anywhere, and it
 * reaches the server only through its host (tools/call, resources/read).
 */
let html: Promise<string> | undefined;
export function registerViews(server: McpServer): void {
  registerAppResource(
    server,
    'result-view',
    RESULT_VIEW,
    {
      title: 'codexec result view',
      description: "A run's output, pictures, tables, files and error, and its approval while it waits",
      _meta: { ui: { csp: {}, prefersBorder: true } },
    },
    async (uri) => {
      html ??= readFile(packagePath('dist', 'web', 'apps', 'result.html'), 'utf8');
      const text = await html.catch((error: unknown) => {
        html = undefined;
        throw error;
      });
      return {
        contents: [
          {
            uri: uri.href,
            mimeType: RESOURCE_MIME_TYPE,
            text,
            _meta: { ui: { csp: {}, prefersBorder: true } },
          },
        ],
      };
    },
  );
}
