// A 2026-era approval answers once and for one caller. The attack: one approved retry (its
// inputResponses and our signed requestState) sent again and again ran the code each time, for
// 24 hours, from any principal; and trust given for a new workspace covered a host directory.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RawServer, startRawServer } from '../helpers/raw.js';

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
};
const APPROVE = { approval: { action: 'accept', content: { decision: 'approve' } } };

interface CallResult {
  resultType?: string;
  requestState?: string;
  structuredContent?: { stdout?: string; code?: string };
}

describe('a 2026-era approval ticket', () => {
  let server: RawServer;
  let id = 0;
  const call = async (args: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const reply = await server.request(++id, 'tools/call', {
      name: 'execute_code',
      arguments: args,
      _meta: META,
      ...extra,
    });
    return reply.result as CallResult;
  };

  beforeAll(async () => {
    server = startRawServer({ CODEXEC_APPROVAL: 'ask' });
    await server.discover();
  });
  afterAll(() => server.close());

  it('runs the code once: the same retry sent again is asked afresh', async () => {
    const args = { language: 'bash', code: 'echo ran-once-7f3' };
    const asked = await call(args);
    expect(asked.resultType).toBe('input_required');
    const retry = { inputResponses: APPROVE, requestState: asked.requestState };
    const first = await call(args, retry);
    expect(first.structuredContent?.stdout).toBe('ran-once-7f3\n');
    for (let again = 0; again < 2; again++) {
      const replayed = await call(args, retry);
      expect(replayed.resultType).toBe('input_required'); // a new question, nothing run
      expect(replayed.requestState).not.toBe(asked.requestState);
    }
  });
});
