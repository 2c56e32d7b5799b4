import { hostHeaderValidationResponse, localhostAllowedHostnames } from '@modelcontextprotocol/server';

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost', '[::1]']);

/** A host that only this machine can reach: the only kind `--no-auth` may bind. */
export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host.toLowerCase()) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export interface Refusal {
  readonly status: number;
  readonly message: string;
  readonly headers?: Record<string, string>;
}

/**
 * DNS rebinding: a page on evil.example resolving to 127.0.0.1 reaches a loopback server with its
 * own Host and Origin. On a loopback bind the Host must name loopback (the SDK's check); a
 * browser's Origin must be one listed in CODEXEC_HTTP_ALLOWED_ORIGINS on any bind. No Origin is
 * allowed: non-browser clients (every MCP client today) send none.
 */
export function checkOrigins(
  request: Request,
  loopbackBind: boolean,
  allowedOrigins: readonly string[],
): Refusal | undefined {
  if (loopbackBind) {
    const rejected = hostHeaderValidationResponse(request, localhostAllowedHostnames());
    if (rejected)
      return {
        status: 403,
        message: `Host ${request.headers.get('host') ?? '(none)'} is not a loopback name`,
      };
  }
  const origin = request.headers.get('origin');
  if (origin === null) return undefined;
  if (allowedOrigins.includes(origin.replace(/\/+$/, '').toLowerCase())) return undefined;
  return { status: 403, message: `Origin ${origin} is not allowed (CODEXEC_HTTP_ALLOWED_ORIGINS)` };
}
