// The view's one link to codexec: its host, over postMessage (the extension's App). Calls to the
// server's tools go through the host, which proxies them on the connection that made the call.
import {
  App,
  applyDocumentTheme,
  applyHostStyleVariables,
  PostMessageTransport,
} from '@modelcontextprotocol/ext-apps';

export interface Block {
  readonly type: string;
  readonly text?: string;
  readonly data?: string;
  readonly mimeType?: string;
}

/** A tool's result as the host hands it over (the standard CallToolResult, the fields we read). */
export interface ToolResult {
  readonly content?: readonly Block[];
  readonly structuredContent?: Record<string, unknown>;
  readonly isError?: boolean;
}

export const app = new App({ name: 'codexec result view', version: '1.0.0' }, {});

/** Call one of the server's tools through the host: its structured value, or an Error with its words. */
export async function callTool<T>(name: string, args: Record<string, unknown>): Promise<T> {
  const result = (await app.callServerTool({ name, arguments: args })) as ToolResult;
  const value = result.structuredContent as (T & { error?: string }) | undefined;
  if (result.isError || !value) throw new Error(value?.error ?? `${name} failed`);
  return value;
}

/** Follow the host's theme and style variables (each optional: the CSS has its own defaults). */
export function followHostStyle(): void {
  const apply = () => {
    const context = app.getHostContext();
    if (context?.theme) applyDocumentTheme(context.theme);
    if (context?.styles?.variables) applyHostStyleVariables(context.styles.variables);
  };
  app.addEventListener('hostcontextchanged', apply);
  apply();
}

export function connect(): Promise<void> {
  return app.connect(new PostMessageTransport(window.parent, window.parent));
}
