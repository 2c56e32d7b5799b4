// Policy through MCP, both eras: each built-in rule refuses or asks before anything runs, a
// policy.json override changes that, CODEXEC_ENABLED=false drops the code tools, and
// CODEXEC_ALLOWED_RUNTIMES narrows the languages.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUILTIN_RULES } from '../../src/policy/index.js';
import { baseEnv, CLI, callTool, type ElicitParams, ERAS, startServer, tempDir } from '../helpers/server.js';
import { SAMPLES, STOP_FIRST } from '../policy/samples.js';

const CODE_TOOLS = ['execute_code', 'install_package', 'run_script', 'send_to_session', 'start_session'];

function execDirs(home: string): string[] {
  const dir = join(home, 'sandbox');
  return existsSync(dir) ? readdirSync(dir).filter((name) => name.startsWith('exec_')) : [];
}

const actionOf = (id: string) => BUILTIN_RULES.find((rule) => rule.id === id)?.action;

describe.each(ERAS)('policy rules (%s era)', (era) => {
  it('every built-in rule: deny refuses POLICY_DENIED naming it, ask asks naming it; nothing runs', async () => {
    const forms: ElicitParams[] = [];
    const server = await startServer({
      era,
      env: { CODEXEC_APPROVAL: 'risky' },
      elicit: (params) => {
        forms.push(params);
        return { action: 'accept', content: { decision: 'deny' } };
      },
    });
    try {
      for (const sample of SAMPLES) {
        const code = `${STOP_FIRST[sample.language]}\n${sample.caught[0]}`;
        const { isError, value } = await callTool(server.client, 'execute_code', {
          language: sample.language,
          code,
        });
        expect(isError, sample.rule).toBe(true);
        if (actionOf(sample.rule) === 'deny') {
          expect(value, sample.rule).toMatchObject({ code: 'POLICY_DENIED' });
          expect(String(value.error)).toContain(`rule ${sample.rule}:`);
        } else {
          expect(value, sample.rule).toMatchObject({ code: 'APPROVAL_DENIED' });
          expect(forms.at(-1)?.message).toContain(`policy rule ${sample.rule}:`);
        }
      }
      expect(forms).toHaveLength(SAMPLES.filter((s) => actionOf(s.rule) === 'ask').length);
      expect(execDirs(server.home)).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('rules apply to session sends and saved scripts too', async () => {
    const server = await startServer({ era });
    try {
      const session = await callTool<{ session_id: string }>(server.client, 'start_session', {
        language: 'python',
      });
      const sent = await callTool(server.client, 'send_to_session', {
        session_id: session.value.session_id,
        code: "import shutil\nif False: shutil.rmtree('/')",
      });
      expect(sent.value).toMatchObject({ code: 'POLICY_DENIED' });
      expect(String(sent.value.error)).toContain('python-rmtree-root');
      await callTool(server.client, 'save_script', {
        name: 'wipe',
        description: 'an accident',
        language: 'bash',
        code: 'exit 0\nrm -rf ~',
      });
      const ran = await callTool(server.client, 'run_script', { name: 'wipe' });
      expect(ran.value).toMatchObject({ code: 'POLICY_DENIED' });
      expect(String(ran.value.error)).toContain('rm-rf-root');
    } finally {
      await server.close();
    }
  });

  it('policy.json overrides a built-in action and adds a rule; an allow rule skips asking', async () => {
    const home = tempDir();
    writeFileSync(
      join(home, 'policy.json'),
      JSON.stringify({
        rules: { 'pipe-to-shell': 'deny', 'rm-rf-root': 'allow' },
        extra: [
          {
            id: 'no-curl',
            pattern: '\\bcurl\\b',
            languages: ['bash'],
            action: 'deny',
            description: 'no curl',
          },
        ],
      }),
    );
    // CODEXEC_APPROVAL=ask and a client that cannot be asked: only an allow rule lets code run.
    const server = await startServer({ era, home, env: { CODEXEC_APPROVAL: 'ask' } });
    try {
      const run = (code: string) => callTool(server.client, 'execute_code', { language: 'bash', code });
      expect((await run('exit 0\ncurl -s x | sh')).value).toMatchObject({ code: 'POLICY_DENIED' });
      const curl = await run('curl https://example.com');
      expect(curl.value).toMatchObject({ code: 'POLICY_DENIED' });
      expect(String(curl.value.error)).toContain('no-curl');
      expect((await run('echo plain')).value).toMatchObject({ code: 'APPROVAL_UNAVAILABLE' });
      const allowed = await run('echo allowed; exit 0\nrm -rf /');
      expect(allowed.value).toMatchObject({ success: true, stdout: 'allowed\n' });
    } finally {
      await server.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('policy.json at start-up', () => {
  it('a bad file stops `codexec serve` with exit 2, naming the file and the fault', () => {
    const home = tempDir();
    writeFileSync(join(home, 'policy.json'), JSON.stringify({ rules: { sudo: 'block' } }));
    const result = spawnSync(process.execPath, [CLI, 'serve'], {
      env: baseEnv(home),
      input: '',
      encoding: 'utf8',
      timeout: 30_000,
    });
    rmSync(home, { recursive: true, force: true });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(`${join(home, 'policy.json')}: rules.sudo:`);
    expect(result.stdout).toBe('');
  });
});

describe('codexec doctor', () => {
  it('says which gate is active: enabled, approval mode, runtimes, rules and policy.json', () => {
    const home = tempDir();
    writeFileSync(join(home, 'policy.json'), JSON.stringify({ rules: { sudo: 'allow' } }));
    const result = spawnSync(process.execPath, [CLI, 'doctor'], {
      env: { ...baseEnv(home), CODEXEC_APPROVAL: 'risky', CODEXEC_ALLOWED_RUNTIMES: 'python,bash' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    rmSync(home, { recursive: true, force: true });
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('code execution:          enabled (CODEXEC_ENABLED)');
    expect(result.stdout).toMatch(/approval: +risky: .*\(CODEXEC_APPROVAL\)/);
    expect(result.stdout).toContain('allowed runtimes:        python, bash');
    const rules = BUILTIN_RULES.length;
    expect(result.stdout).toContain(`policy rules:            ${rules} (`);
    expect(result.stdout).toContain(`1 allow) from built-ins + ${join(home, 'policy.json')}`);
  });
});

describe.each(ERAS)('CODEXEC_ENABLED and CODEXEC_ALLOWED_RUNTIMES (%s era)', (era) => {
  it('CODEXEC_ENABLED=false registers no tool that runs code; the read-only tools stay', async () => {
    const server = await startServer({ era, env: { CODEXEC_ENABLED: 'false' } });
    try {
      const names = (await server.client.listTools()).tools.map((tool) => tool.name).sort();
      for (const name of CODE_TOOLS) expect(names).not.toContain(name);
      expect(names).toEqual([
        'close_session',
        'get_execution_log',
        'get_script',
        'health',
        'kill_session',
        'list_scripts',
        'list_sessions',
        'read_file',
        'save_script',
        'search_execution_logs',
        'search_scripts',
      ]);
      expect(server.client.getInstructions()).toContain('CODEXEC_ENABLED=false');
    } finally {
      await server.close();
    }
  });

  it('other languages vanish from the enums and are refused RUNTIME_NOT_ALLOWED', async () => {
    const server = await startServer({ era, env: { CODEXEC_ALLOWED_RUNTIMES: 'python' } });
    try {
      const tools = new Map((await server.client.listTools()).tools.map((tool) => [tool.name, tool]));
      const languageEnum = (name: string) =>
        (tools.get(name)?.inputSchema.properties?.language as { enum?: string[] } | undefined)?.enum;
      // With its alias, and no alias of a language refused.
      expect(languageEnum('execute_code')).toEqual(['python', 'py']);
      expect(languageEnum('start_session')).toEqual(['python', 'py']);
      expect(languageEnum('install_package')).toEqual(['python']);
      expect(server.client.getInstructions()).toContain('runs Python code');

      const refused = await callTool(server.client, 'execute_code', { language: 'bash', code: 'echo x' });
      expect(refused).toMatchObject({ isError: true, value: { code: 'RUNTIME_NOT_ALLOWED' } });
      expect(String(refused.value.error)).toContain('CODEXEC_ALLOWED_RUNTIMES=python');
      const aliased = await callTool(server.client, 'execute_code', { language: 'sh', code: 'echo x' });
      expect(aliased).toMatchObject({ isError: true, value: { code: 'RUNTIME_NOT_ALLOWED' } });
      const session = await callTool(server.client, 'start_session', { language: 'node' });
      expect(session.value).toMatchObject({ code: 'RUNTIME_NOT_ALLOWED' });
      const install = await callTool(server.client, 'install_package', {
        package: 'left-pad',
        language: 'node',
      });
      expect(install.value).toMatchObject({ code: 'RUNTIME_NOT_ALLOWED' });
      await callTool(server.client, 'save_script', {
        name: 'greet',
        description: 'a bash script',
        language: 'bash',
        code: 'echo hi',
      });
      const script = await callTool(server.client, 'run_script', { name: 'greet' });
      expect(script.value).toMatchObject({ code: 'RUNTIME_NOT_ALLOWED' });
      expect(execDirs(server.home)).toEqual([]);

      const ok = await callTool(server.client, 'execute_code', { language: 'python', code: 'print(2)' });
      expect(ok.value).toMatchObject({ success: true, stdout: '2\n' });
    } finally {
      await server.close();
    }
  });

  it('the instructions say what to do and mention approval when it is active', async () => {
    const server = await startServer({ era, env: { CODEXEC_APPROVAL: 'ask' } });
    try {
      const text = server.client.getInstructions() ?? '';
      expect(text).toContain('Prefer an existing tool');
      expect(text).toContain('Explain what the code will do');
      expect(text).toContain('report what ran and what it showed');
      expect(text).toContain('asks the user for approval');
      expect(text.length).toBeLessThan(1000);
    } finally {
      await server.close();
    }
  });
});
