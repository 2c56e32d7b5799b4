import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/server';
import { type CodexecError, QuotaExceededError, toCodexecError } from '../errors/index.js';
import { log } from '../util/index.js';

/**
 * A normal result: the structured value plus the same JSON as text for clients without structure;
 * `extra` content (images, links) goes after the JSON.
 */
export function okResult(
  value: Record<string, unknown>,
  extra: readonly ContentBlock[] = [],
): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }, ...extra], structuredContent: value };
}

/** A refused request: `isError` with `{ success: false, error, code }` in both renderings. */
export function errorResult(error: unknown): CallToolResult {
  const failure: CodexecError = toCodexecError(error);
  if (failure.code === 'INTERNAL')
    log('error', `${failure.message}\n${(failure.cause as Error)?.stack ?? ''}`);
  const value = {
    success: false,
    error: failure.message,
    code: failure.code,
    ...(failure instanceof QuotaExceededError && failure.fields()),
  };
  return {
    content: [{ type: 'text', text: JSON.stringify(value) }],
    structuredContent: value,
    isError: true,
  };
}
