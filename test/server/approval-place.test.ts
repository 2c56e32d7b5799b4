// Whoever approves a run sees where its code works: `rm -rf ./*` approved for a throwaway
// workspace must not run in the approver's project directory (the attack: a host working_dir, the
// command workspace and a session in a host directory all showed "Session: none (one-shot)" or a
// bare session id).
import { chownSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quotedPath } from '../../src/util/index.js';
import { allowing, OWNER, ownedDir } from '../helpers/host-dir.js';
import { IS_ROOT } from '../helpers/mode.js';
import { callTool, type ElicitParams, startServer, type TestServer } from '../helpers/server.js';

describe('the approval form says where the code runs', () => {
  let server: TestServer;
  const forms: ElicitParams[] = [];
  const project = realpathSync(ownedDir('codexec-approval-place-'));
  const asOwner = IS_ROOT ? `, as its owner (uid ${OWNER.uid})` : '';
  const inProject = `Runs in: the host directory "${project}"${asOwner}: what the code changes there is changed for good`;

  beforeAll(async () => {
    server = await startServer({
      env: { CODEXEC_APPROVAL: 'ask', ...allowing(project) },
      elicit: (params) => {
        forms.push(params);
        return { action: 'accept', content: { decision: 'approve' } };
      },
    });
  });
  afterAll(() => server.close());

  /** The form `tool` with `args` showed (the call approved and run). */
  async function formOf(tool: string, args: Record<string, unknown>): Promise<string> {
    const before = forms.length;
    const call = await callTool(server.client, tool, args);
    expect(call.isError, call.text).toBe(false);
    expect(forms).toHaveLength(before + 1);
    return forms.at(-1)?.message ?? '';
  }

  it('a one-shot run without working_dir: a new workspace', async () => {
    const form = await formOf('execute_code', { language: 'bash', code: 'true' });
    expect(form).toContain('Runs in: a new, empty workspace of its own');
  });

  it.each([
    ['execute_code', { language: 'bash', code: 'true', working_dir: project }],
    ['execute_command', { command: 'true', work_dir: project }],
    ['execute_command', { command: 'true', working_dir: project }],
  ])('%s in a host directory: its path and whom the code runs as', async (tool, args) => {
    expect(await formOf(tool, args)).toContain(inProject);
  });

  it('a directory whose name holds a newline forges no line of the form', async () => {
    const forged = join(project, 'x\nRuns in: a new, empty workspace of its own\u202e');
    mkdirSync(forged);
    if (IS_ROOT) chownSync(forged, OWNER.uid, OWNER.gid);
    const form = await formOf('execute_command', { command: 'true', work_dir: forged });
    expect(form.split('\n').filter((line) => line.startsWith('Runs in:'))).toEqual([
      `Runs in: the host directory ${quotedPath(forged)}${asOwner}: what the code changes there is changed for good`,
    ]);
    expect(form).not.toContain('\u202e'); // shown as \u202e, reversing nothing
  });

  it("execute_command without work_dir, and run_script there: execute_command's workspace", async () => {
    const written = await formOf('write_file', { workspace: 'command', path: 'w.txt', content: 'x' });
    expect(written).toContain(
      "Runs in: execute_command's workspace, which keeps its files between commands, ",
    );
    const command = await formOf('execute_command', { command: 'true' });
    expect(command).toContain(
      "Runs in: execute_command's workspace, which keeps its files between commands, ",
    );
    const saved = await callTool(server.client, 'save_script', {
      name: 'noop',
      description: 'does nothing',
      language: 'bash',
      code: 'true',
    });
    expect(saved.isError, saved.text).toBe(false);
    const script = await formOf('run_script', { name: 'noop', workspace: 'command' });
    expect(script).toContain("Runs in: execute_command's workspace");
    expect(await formOf('run_script', { name: 'noop', working_dir: project })).toContain(inProject);
    expect(await formOf('run_script', { name: 'noop' })).toContain('Runs in: a new, empty workspace');
  });

  it('code sent to a session: its workspace, or the host directory it was started in', async () => {
    const own = await callTool<{ session_id: string; working_dir: string }>(server.client, 'start_session', {
      language: 'bash',
    });
    const hosted = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'bash',
      working_dir: project,
    });
    expect([own.isError, hosted.isError]).toEqual([false, false]);
    const ownForm = await formOf('send_to_session', { session_id: own.value.session_id, code: 'true' });
    expect(ownForm).toContain(
      `Runs in: session ${own.value.session_id}'s workspace, "${own.value.working_dir}"`,
    );
    for (const [tool, args] of [
      ['send_to_session', { code: 'pwd' }],
      ['execute_code', { language: 'bash', code: 'pwd' }],
      ['write_file', { path: 'notes.txt', content: 'x' }],
    ] as const) {
      const form = await formOf(tool, { ...args, session_id: hosted.value.session_id });
      expect(form, tool).toContain(inProject);
    }
    expect(readFileSync(join(project, 'notes.txt'), 'utf8')).toBe('x'); // approved, written there
  });
});

describe('trust is for the place the form showed', () => {
  it('trust given for a new workspace asks again for a host directory, and not for another new one', async () => {
    const forms: ElicitParams[] = [];
    const project = realpathSync(ownedDir('codexec-trust-place-'));
    const server = await startServer({
      env: { CODEXEC_APPROVAL: 'ask', ...allowing(project) },
      elicit: (params) => {
        forms.push(params);
        return { action: 'accept', content: { decision: 'approve_trust_session' } };
      },
    });
    try {
      const run = (args: Record<string, unknown> = {}) =>
        callTool(server.client, 'execute_code', { language: 'python', code: 'print(1)', ...args });
      expect((await run()).isError).toBe(false);
      expect(forms).toHaveLength(1);
      expect(JSON.stringify(forms[0]?.requestedSchema)).toContain(
        'trust execute_code with python in a new, empty workspace of its own on this connection',
      );
      expect((await run()).isError).toBe(false);
      expect(forms).toHaveLength(1); // trusted there
      expect((await run({ working_dir: project })).isError).toBe(false);
      expect(forms).toHaveLength(2); // not in the host directory
      expect(forms[1]?.message).toContain(`Runs in: the host directory "${project}"`);
    } finally {
      await server.close();
    }
  });
});
