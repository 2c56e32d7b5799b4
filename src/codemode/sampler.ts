import type { CreateMessageRequestParams } from '@modelcontextprotocol/server';
import { BridgeError } from '../bridge/index.js';
import type { SecretsFilter } from '../policy/index.js';

// llm.ask / llm.think: sandboxed code asks the client's model through MCP sampling,
// within the run's rounds and tokens, with the secrets filter on what goes out and what comes back.
// Only a 2025-era connection can be asked while a call runs: the 2026-07-28 revision has no
// server-to-client request during a call (input_required would end the run's call first).

export interface ThinkRequest {
  readonly messages: ReadonlyArray<{ readonly role: 'user' | 'assistant'; readonly content: string }>;
  readonly systemPrompt?: string | undefined;
  readonly maxTokens?: number | undefined;
}

export interface Sampler {
  think(request: ThinkRequest): Promise<string>;
}

export interface SamplingLimits {
  readonly rounds: number;
  readonly tokens: number;
}

/** What a run (or a session, over all its sends) has used of its limits. */
export interface SamplingUse {
  rounds: number;
  tokens: number;
}

/**
 * Sends one sampling/createMessage to the client and gives its result (the server layer knows how,
 * and on which stream); only its content is read.
 */
export type AskModel = (params: CreateMessageRequestParams) => Promise<{ readonly content: unknown }>;

/** Each request asks for at most this many tokens unless the code says otherwise. */
const DEFAULT_MAX_TOKENS = 1000;

/**
 * A sampler for one request (a run, or one send of a session). `unavailable`: why this client
 * cannot be asked (then every call raises "sampling not available: …"). The token budget counts
 * the maxTokens each request asks for; `used` carries a session's use from send to send.
 */
export function createSampler(
  ask: AskModel,
  limits: SamplingLimits,
  secrets: SecretsFilter | undefined,
  unavailable: string | undefined,
  used: SamplingUse = { rounds: 0, tokens: 0 },
): Sampler {
  const clean = (text: string) => secrets?.redact(text) ?? text;
  return {
    async think(request) {
      if (unavailable)
        throw new BridgeError('SAMPLING_UNAVAILABLE', `sampling not available: ${unavailable}`);
      if (used.rounds >= limits.rounds) {
        throw new BridgeError('SAMPLING_LIMIT', `max_sampling_rounds (${limits.rounds}) reached`);
      }
      const maxTokens = request.maxTokens ?? Math.min(DEFAULT_MAX_TOKENS, limits.tokens - used.tokens);
      if (maxTokens < 1 || used.tokens + maxTokens > limits.tokens) {
        throw new BridgeError(
          'SAMPLING_LIMIT',
          `max_sampling_tokens (${limits.tokens}) reached: ${used.tokens} used, ${maxTokens} more asked`,
        );
      }
      used.rounds += 1;
      used.tokens += maxTokens;
      const result = await ask({
        messages: request.messages.map((message) => ({
          role: message.role,
          content: { type: 'text' as const, text: clean(message.content) },
        })),
        ...(request.systemPrompt !== undefined && { systemPrompt: clean(request.systemPrompt) }),
        maxTokens,
      }).catch((error: Error) => {
        throw new BridgeError('SAMPLING_FAILED', `the client's model did not answer: ${error.message}`);
      });
      const content = Array.isArray(result.content) ? result.content : [result.content];
      const text = content
        .map((block) =>
          (block as { type?: string }).type === 'text' ? (block as { text: string }).text : '',
        )
        .join('');
      return clean(text);
    },
  };
}
