// answer_approval: what only the client's MCP Apps view calls (hosts keep it from the model; a
// client without apps never sees it). The view shows the approval its call waits on and answers
// it as the client's own approval form would: the same principal's question, the same race.
import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { DECISIONS } from '../../approvals/index.js';
import { CodexecError } from '../../errors/index.js';
import { currentPrincipal } from '../../util/index.js';
import { showsApps } from '../apps.js';
import { defineTool } from '../define-tool.js';
import type { Services } from '../services.js';

const input = () =>
  z.object({
    id: z.string().max(64).optional(),
    decision: z.enum(DECISIONS).optional(),
  });

const waiting = () =>
  z.object({
    id: z.string(),
    kind: z.enum(['run', 'host']),
    tool: z.string(),
    language: z.string().nullable(),
    session_id: z.string().nullable(),
    code: z.string(),
    code_chars: z.number(),
    powers: z.string().nullable(),
    place: z.string().nullable().optional(),
    reason: z.string(),
    trust: z.string(),
    asked_at: z.number(),
  });

const output = () =>
  z.object({
    success: z.boolean(),
    answered: z.string().optional(),
    approvals: z.array(waiting()),
  });

export function registerAnswerApproval(server: McpServer, services: Services): void {
  defineTool(server, {
    name: 'answer_approval',
    title: 'Answer an approval',
    description: "The result view's: list this client's approvals, or answer one.",
    schemas: () => ({
      input: input(),
      output: output(),
    }),
    annotations: {},
    handler: async ({ id, decision }, ctx) => {
      if (!showsApps(server, ctx))
        throw new CodexecError('FORBIDDEN', 'answer_approval is for a client that shows MCP Apps views');
      const principal = currentPrincipal();
      const board = services.viewApprovals;
      if ((id === undefined) !== (decision === undefined))
        throw new CodexecError('INVALID_INPUT', 'give both id and decision, or neither to list');
      const answered = id && decision ? board.answer(principal, id, decision).id : undefined;
      return { success: true, ...(answered && { answered }), approvals: board.list(principal) };
    },
  });
}
