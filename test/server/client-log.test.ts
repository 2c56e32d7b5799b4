// The logging capability: the server's own log lines reach an MCP client as notifications/message.
// A line said while a tool call is handled goes to that call's client (2025-11-25: at the level
// logging/setLevel chose; 2026-07-28: only at a level the request names); a line said outside any
// call goes only to a 2025-era stdio client that chose a level. Every line stays on stderr.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { connectHttp, startHttp } from '../helpers/http.js';
import { startRawServer } from '../helpers/raw.js';
import { callTool, passableHome, startServer, type TestServer } from '../helpers/server.js';
import { envelope } from '../helpers/tasks.js';

const LOG_LEVEL_META = 'io.modelcontextprotocol/logLevel';
const CORRUPT = 'script index corrupt';

interface Message {
  readonly level: string;
  readonly logger?: string;
  readonly data: unknown;
}

/** A home whose script index is not valid JSON: the first script tool call says so (a warning). */
function homeWithCorruptIndex(): string {
  const home = passableHome();
  mkdirSync(join(home, 'scripts'), { recursive: true });
  writeFileSync(join(home, 'scripts', 'index.json'), '{ not json');
  return home;
}

/** Every notifications/message the client gets. */
function messagesOf(client: Client): Message[] {
  const messages: Message[] = [];
  client.setNotificationHandler('notifications/message', (notification) => {
    messages.push(notification.params as Message);
  });
  return messages;
}

const saying = (messages: readonly Message[], text: string) =>
  messages.filter((message) => String(message.data).includes(text));

describe('the server log as MCP notifications', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('2025-11-25: a line said in a call goes to its client, at the level it chose; stderr keeps it', async () => {
    const home = homeWithCorruptIndex();
    server = await startServer({ home });
    const messages = messagesOf(server.client);
    expect(server.client.getServerCapabilities()?.logging).toEqual({});
    await server.client.setLoggingLevel('warning');
    await callTool(server.client, 'list_scripts', {});
    await eventually(() => saying(messages, CORRUPT).length > 0, 5000);
    const [line] = saying(messages, CORRUPT);
    expect(line).toMatchObject({ level: 'warning', logger: 'codexec' });
    expect(server.stderr()).toContain(CORRUPT);
    rmSync(home, { recursive: true, force: true });
  }, 60_000);

  it('2025-11-25: a level above the line keeps it from the client', async () => {
    const home = homeWithCorruptIndex();
    server = await startServer({ home });
    const messages = messagesOf(server.client);
    await server.client.setLoggingLevel('error');
    await callTool(server.client, 'list_scripts', {});
    await eventually(() => server?.stderr().includes(CORRUPT) === true, 5000);
    // Past the reply, as a notification would have come before it.
    await callTool(server.client, 'list_scripts', {});
    expect(saying(messages, CORRUPT)).toEqual([]);
    rmSync(home, { recursive: true, force: true });
  }, 60_000);

  it('2025-11-25 over stdio: a line said outside any call (a session that died later) reaches a client that chose a level', async () => {
    server = await startServer();
    const messages = messagesOf(server.client);
    await server.client.setLoggingLevel('warning');
    const session = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'python',
    });
    // The session's interpreter kills itself half a second after the call has returned.
    await callTool(server.client, 'send_to_session', {
      session_id: session.value.session_id,
      code: 'import os, threading\nthreading.Timer(0.5, lambda: os.kill(os.getpid(), 9)).start()',
    });
    expect(await eventually(() => saying(messages, 'ended unexpectedly').length > 0, 15_000)).toBe(true);
    expect(saying(messages, 'ended unexpectedly')[0]).toMatchObject({ level: 'warning', logger: 'codexec' });
  }, 60_000);

  it('code that makes the server log: a few lines a session, quoted, each one line', async () => {
    server = await startServer();
    const messages = messagesOf(server.client);
    await server.client.setLoggingLevel('debug');
    const session = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'python',
    });
    // The driver's channel (fd 100) takes frames from the code too: 30 errors about no process,
    // each trying to pass for a line of the server's own on a terminal.
    const code = [
      'import json, os',
      'body = json.dumps({"type": "proc_error", "proc": None, "message": "x\\r\\x1b[31mcodexec error: forged"}).encode()',
      'for _ in range(30): os.write(100, b"%d\\n%s" % (len(body), body))',
    ].join('\n');
    await callTool(server.client, 'send_to_session', { session_id: session.value.session_id, code });
    await eventually(() => saying(messages, 'further process errors are not logged').length > 0, 10_000);
    const errors = saying(messages, 'process error: "');
    expect(errors).toHaveLength(5);
    for (const error of errors) {
      expect(String(error.data)).toContain('process error: "x\\r\\u001b[31mcodexec error: forged"');
      expect(String(error.data)).not.toMatch(/\p{Cc}/u);
    }
    expect(server.stderr().match(/process error: "/g)).toHaveLength(5);
  }, 60_000);

  it('2026-07-28: only a request that names a level gets the lines said in it', async () => {
    /** A fresh server's first script call (the index read: a warning), with `meta` in its envelope. */
    const firstCall = async (meta: Record<string, unknown>) => {
      const raw = startRawServer({});
      try {
        mkdirSync(join(raw.home, 'scripts'), { recursive: true });
        writeFileSync(join(raw.home, 'scripts', 'index.json'), '{ not json');
        await raw.discover();
        await raw.request('c1', 'tools/call', {
          name: 'list_scripts',
          arguments: {},
          _meta: { ...envelope(false), ...meta },
        });
        const notes = raw.received.filter(
          (message) => (message as { method?: string }).method === 'notifications/message',
        ) as { params: Message }[];
        return { notes: notes.map((note) => note.params), stderr: raw.stderr() };
      } finally {
        await raw.close();
      }
    };
    const quiet = await firstCall({});
    expect(quiet.stderr).toContain(CORRUPT);
    expect(saying(quiet.notes, CORRUPT)).toEqual([]);
    const asked = await firstCall({ [LOG_LEVEL_META]: 'warning' });
    expect(saying(asked.notes, CORRUPT)[0]).toMatchObject({ level: 'warning', logger: 'codexec' });
    const above = await firstCall({ [LOG_LEVEL_META]: 'error' });
    expect(above.stderr).toContain(CORRUPT);
    expect(saying(above.notes, CORRUPT)).toEqual([]);
  }, 60_000);

  it('over HTTP, 2025-11-25: a line said in a call goes to its client at the level its principal chose', async () => {
    const home = homeWithCorruptIndex();
    const http = await startHttp({ home, args: ['--no-auth'] });
    try {
      const legacy = await connectHttp(`${http.url}`, undefined, 'legacy');
      const messages = messagesOf(legacy);
      await legacy.setLoggingLevel('warning');
      await callTool(legacy, 'list_scripts', {});
      expect(saying(messages, CORRUPT)[0]).toMatchObject({ level: 'warning', logger: 'codexec' });
      await legacy.close();
    } finally {
      await http.stop();
      rmSync(home, { recursive: true, force: true });
    }
  }, 60_000);
});
