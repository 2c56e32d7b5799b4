// A minimal MCP Apps host page, built from the extension's host side (AppBridge): it renders a
// view's HTML in a sandboxed iframe under the extension's default CSP, passes the view's tool
// calls to the test (window.hostCallTool, which calls the real server), and hands the view a
// call's input and result as a host does. Bundled by esbuild in the test, run in Chromium.
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';

// The extension's restrictive default, as a host applies it when a resource declares no domains.
const CSP =
  "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; " +
  "img-src 'self' data:; media-src 'self' data:; connect-src 'none'; frame-src 'none'; " +
  "object-src 'none'; base-uri 'self'";

interface HostWindow {
  hostCallTool(params: unknown): Promise<never>;
  openView(html: string, tool: string): Promise<void>;
  sendInput(args: Record<string, unknown>): Promise<void>;
  sendResult(result: unknown): Promise<void>;
  violations: string[];
}
const host = window as unknown as HostWindow;
host.violations = [];

host.openView = async (html, tool) => {
  const iframe = document.createElement('iframe');
  iframe.setAttribute('sandbox', 'allow-scripts');
  iframe.style.cssText = 'width: 760px; height: 900px; border: 1px solid #ccc';
  const policy = `<meta http-equiv="Content-Security-Policy" content="${CSP}">`;
  iframe.srcdoc = html.replace('<head>', `<head>${policy}`);
  document.body.append(iframe);
  const view = iframe.contentWindow;
  if (!view) throw new Error('no iframe window');
  const bridge = new AppBridge(
    null,
    { name: 'codexec test host', version: '1.0.0' },
    { serverTools: {}, serverResources: {} },
    { hostContext: { theme: 'light', toolInfo: { tool: { name: tool, inputSchema: { type: 'object' } } } } },
  );
  bridge.oncalltool = (params) => host.hostCallTool(params);
  const initialized = new Promise<void>((resolve) => {
    bridge.oninitialized = () => resolve();
  });
  await bridge.connect(new PostMessageTransport(view, view));
  await initialized;
  host.sendInput = (args) => bridge.sendToolInput({ arguments: args });
  host.sendResult = (result) => bridge.sendToolResult(result as never);
};
