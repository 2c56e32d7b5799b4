// The channel between sandboxed code and the bridge (src/codemode/channel.ts), driven over its
// real Unix socket: nothing is answered before the run's token, every request is checked before it
// reaches the bridge, and an oversized line closes the connection. The bridge side is a small
// BridgeRun of this test: the channel's seam, not a stand-in for something that could run here.
import { createConnection, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { BridgeRun } from '../../src/bridge/index.js';
import { type Channel, openChannel } from '../../src/codemode/index.js';
import { tempDir } from '../helpers/server.js';

const seen: unknown[] = [];
const run: BridgeRun = {
  async call(name, args) {
    seen.push({ name, args });
    return { content: [{ type: 'text', text: `called ${name}` }] };
  },
  async discover() {
    return [];
  },
  async search() {
    return [];
  },
  async schema(name) {
    return { name, server: 's', tool: 't', description: '', inputSchema: {} };
  },
  takeCalls: () => undefined,
};

const channels: Channel[] = [];
afterAll(async () => {
  for (const channel of channels) await channel.close();
});

async function open(): Promise<Channel> {
  const channel = await openChannel(tempDir(), run);
  channels.push(channel);
  return channel;
}

/** Send lines; resolve with every line received until the server closes or `want` lines came. */
function exchange(
  channel: Channel,
  lines: string[],
  want: number,
): Promise<{ lines: string[]; closed: boolean }> {
  return new Promise((resolve) => {
    const socket: Socket = createConnection(channel.socketPath);
    const got: string[] = [];
    let buffered = '';
    const done = (closed: boolean) => {
      socket.destroy();
      resolve({ lines: got, closed });
    };
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      const parts = buffered.split('\n');
      buffered = parts.pop() ?? '';
      got.push(...parts);
      if (got.length >= want) done(false);
    });
    socket.on('close', () => done(true));
    socket.on('error', () => done(true));
    for (const line of lines) socket.write(`${line}\n`);
  });
}

describe('the code-mode channel', () => {
  it('answers requests after the right token, and checks each before it reaches the bridge', async () => {
    const channel = await open();
    const { lines } = await exchange(
      channel,
      [
        JSON.stringify({ token: channel.token }),
        JSON.stringify({ id: 1, method: 'call', params: { name: 'mcp__s__t', args: { x: 1 } } }),
        JSON.stringify({ id: 2, method: 'call', params: { name: '', args: {} } }),
        JSON.stringify({ id: 3, method: 'exec', params: {} }),
        'not json',
      ],
      4,
    );
    const answers = lines.map((line) => JSON.parse(line));
    expect(answers).toContainEqual({
      id: 1,
      result: { content: [{ type: 'text', text: 'called mcp__s__t' }] },
    });
    for (const id of [2, 3, null]) {
      expect(answers).toContainEqual({
        id,
        error: { code: 'INVALID_REQUEST', message: 'not a valid bridge request' },
      });
    }
    expect(seen).toEqual([{ name: 'mcp__s__t', args: { x: 1 } }]);
  });

  it('closes, answering nothing, on a wrong token or a request before the token', async () => {
    const channel = await open();
    const other = await open();
    for (const first of [
      JSON.stringify({ token: other.token }),
      JSON.stringify({ token: `${channel.token.slice(0, -1)}${channel.token.endsWith('0') ? '1' : '0'}` }),
      JSON.stringify({ id: 1, method: 'discover', params: {} }),
    ]) {
      const { lines, closed } = await exchange(
        channel,
        [first, JSON.stringify({ id: 2, method: 'discover' })],
        1,
      );
      expect(closed).toBe(true);
      expect(lines).toEqual([]);
    }
  });

  it('refuses a line over 1 MiB and closes', async () => {
    const channel = await open();
    const { lines, closed } = await exchange(
      channel,
      [JSON.stringify({ token: channel.token }), 'x'.repeat(1_100_000)],
      2,
    );
    expect(closed).toBe(true);
    expect(JSON.parse(lines[0] as string).error.code).toBe('INVALID_REQUEST');
  });

  it('removes its socket when closed', async () => {
    const channel = await openChannel(tempDir(), run);
    await channel.close();
    const { closed } = await exchange(channel, [JSON.stringify({ token: channel.token })], 1);
    expect(closed).toBe(true);
  });
});
