// 2026-07-28 task status pushes: the Tasks extension lets a server send notifications/tasks on a
// subscriptions/listen stream for the task ids it acknowledges (it MAY). codexec acknowledges none
// yet, so a client reads from the acknowledgement that it polls tasks/get, which carries the same.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RawServer, startRawServer } from '../helpers/raw.js';
import { envelope, overStdio, pollUntilDone, type Send } from '../helpers/tasks.js';

describe('2026-07-28: subscriptions/listen for a task (stdio)', () => {
  let server: RawServer;
  let send: Send;
  beforeAll(async () => {
    server = startRawServer();
    await server.discover();
    send = overStdio(server);
  });
  afterAll(() => server.close());

  it('acknowledges no task ids and sends no notifications/tasks; tasks/get has the task', async () => {
    const created = await send('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: 'echo polled' },
    });
    const taskId = created.result?.taskId as string;
    expect(created.result).toMatchObject({ resultType: 'task' });
    await server.write(
      `${JSON.stringify({
        jsonrpc: '2.0',
        id: 'listen',
        method: 'subscriptions/listen',
        params: { notifications: { taskIds: [taskId] }, _meta: envelope(true) },
      })}\n`,
    );
    const done = await pollUntilDone(send, taskId);
    expect(done.result).toMatchObject({
      status: 'completed',
      result: { structuredContent: { stdout: 'polled\n' } },
    });
    const notes = server.received as Array<{ method?: string; params?: Record<string, unknown> }>;
    const ack = notes.find((note) => note.method === 'notifications/subscriptions/acknowledged');
    expect(ack?.params).toMatchObject({ notifications: {} });
    expect(ack?.params?.notifications).not.toHaveProperty('taskIds');
    expect(notes.filter((note) => note.method?.startsWith('notifications/tasks'))).toEqual([]);
  });
});
