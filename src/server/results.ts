import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/server';
import { type CodexecError, QuotaExceededError, toCodexecError } from '../errors/index.js';
import { log } from '../util/index.js';
import { resultText, type TextShape } from './text.js';

/**
 * A normal result: the structured value, and its text as `shape` renders it for the model;
 * `extra` content (images, links) goes after the text.
 */
export function okResult(
  value: Record<string, unknown>,
  extra: readonly ContentBlock[] = [],
  shape?: TextShape,
): CallToolResult {
  return { content: [{ type: 'text', text: resultText(value, shape) }, ...extra], structuredContent: value };
}

/** A refused request: `isError` with `{ success: false, error, code }`; the text says the error plainly. */
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
    content: [{ type: 'text', text: resultText(value, { plain: ['error'] }) }],
    structuredContent: value,
    isError: true,
  };
}
