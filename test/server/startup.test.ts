import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERAS, startServer, tempDir } from '../helpers/server.js';

const SEED_TOOLS = [
  'close_session',
  'execute_code',
  'execute_command',
  'get_execution_log',
  'get_script',
  'health',
  'install_package',
  'kill_process',
  'kill_session',
  'list_processes',
  'list_scripts',
  'list_sessions',
  'read_file',
  'read_process_output',
  'run_script',
  'save_script',
  'search_execution_logs',
  'search_scripts',
  'send_to_session',
  'start_process',
  'start_session',
  'write_file',
  'write_stdin',
];

describe.each(ERAS)('server start-up (%s era)', (era) => {
  it('lists every seed tool, each with input and output schemas, and touches nothing on disk', async () => {
    const parent = tempDir();
    const home = join(parent, 'home');
    const server = await startServer({ era, home });
    try {
      const { tools } = await server.client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(SEED_TOOLS);
      for (const tool of tools) {
        expect(tool.description?.length).toBeGreaterThan(40);
        expect(tool.inputSchema.type).toBe('object');
        expect(tool.outputSchema?.type).toBe('object');
        expect(tool.annotations).toBeDefined();
      }
    } finally {
      await server.close();
    }
    // Clients spawn throwaway servers to probe them: that must leave no trace.
    expect(existsSync(home)).toBe(false);
    rmSync(parent, { recursive: true, force: true });
  });
});

describe('tools/list', () => {
  it('says the same after a call as before any: its JSON is made from the schemas the call made', async () => {
    const [fresh, called] = await Promise.all([startServer(), startServer()]);
    try {
      const result = await called.client.callTool({
        name: 'execute_code',
        arguments: { language: 'bash', code: 'echo 1' },
      });
      expect(result.structuredContent).toMatchObject({ success: true, stdout: '1\n' });
      const [before, after] = await Promise.all([fresh.client.listTools(), called.client.listTools()]);
      expect(after.tools).toEqual(before.tools);
      expect(after.tools.find((tool) => tool.name === 'execute_code')?.inputSchema.properties).toHaveProperty(
        'language',
      );
    } finally {
      await Promise.all([fresh.close(), called.close()]);
    }
  });
});
