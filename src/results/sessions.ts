// A session's results other than a send's, declared once: start_session's, close_session's (and
// restart's) and list_sessions' entry. The session manager's types come from these.
import { z } from 'zod';
import { LANGUAGES } from '../runtimes/index.js';

export const startResultSchema = () =>
  z.object({
    success: z.literal(true),
    session_id: z.string(),
    language: z.enum(LANGUAGES),
    name: z.string().nullable(),
    pid: z.number().int(),
    started_at: z.string(),
    working_dir: z.string().describe('absolute directory the session runs in; artifacts live here'),
    sandbox_mode: z.string(),
  });

export const closeResultSchema = () =>
  z.object({
    success: z.literal(true),
    session_id: z.string(),
    duration_total_ms: z.number().int(),
    executions_count: z.number().int(),
  });

export const sessionInfoSchema = () =>
  z.object({
    session_id: z.string(),
    language: z.enum(LANGUAGES),
    name: z.string().nullable(),
    started_at: z.string(),
    last_activity_at: z.string(),
    executions_count: z.number().int(),
    pid: z.number().int(),
    memory_mb: z.number().nullable().describe("resident memory of the session's process tree"),
    packages_installed: z.array(z.string()),
    working_dir: z.string(),
    busy: z.boolean().describe('a send is running or queued'),
    waiting_for_input: z
      .boolean()
      .describe('its code is blocked reading input: answer with send_to_session {session_id, input}'),
    pty: z.boolean().describe('the session runs on a pseudo-terminal (start_session pty: true)'),
  });
