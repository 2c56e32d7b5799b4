import type { ServerEntry } from './clients.js';

const VERIFY_TIMEOUT_MS = 60_000;

/**
 * Start the server exactly as the entry says (command, args, env over the environment an MCP
 * client passes on by default) and list its tools. Resolves with their names; rejects with why not
 * (the server's stderr included).
 */
export async function verifyEntry(entry: ServerEntry): Promise<string[]> {
  // Loaded here, not at the top: the CLI's option list names CLIENTS, and `codexec serve` must
  // not carry the client SDK for that (idle memory).
  const { Client } = await import('@modelcontextprotocol/client');
  const { getDefaultEnvironment, StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
  const transport = new StdioClientTransport({
    command: entry.command,
    args: [...entry.args],
    env: { ...getDefaultEnvironment(), ...entry.env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'codexec-setup', version: '1.0.0' });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${VERIFY_TIMEOUT_MS / 1000} s`)),
      VERIFY_TIMEOUT_MS,
    );
  });
  try {
    await Promise.race([client.connect(transport), timeout]);
    const { tools } = await Promise.race([client.listTools(), timeout]);
    return tools.map((tool) => tool.name);
  } catch (error) {
    const said = stderr.trim().split('\n').slice(-5).join('\n');
    throw new Error(`${(error as Error).message}${said ? `\n${said}` : ''}`);
  } finally {
    clearTimeout(timer);
    await client.close().catch(() => {});
  }
}
