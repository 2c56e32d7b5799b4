import { spawnSync } from 'node:child_process';
import { existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { OWNER, ownedDir } from '../helpers/host-dir.js';
import { IS_ROOT } from '../helpers/mode.js';
import { baseEnv, CLI, tempDir } from '../helpers/server.js';

const home = tempDir();
afterAll(() => rmSync(home, { recursive: true, force: true }));

function codexec(args: string[], options: { input?: string; env?: Record<string, string> } = {}) {
  const out = spawnSync(process.execPath, [CLI, ...args], {
    input: options.input ?? '',
    env: { ...baseEnv(home), ...options.env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: out.status, stdout: out.stdout, stderr: out.stderr };
}

describe('codexec CLI', () => {
  it('lists its commands in --help', () => {
    const { code, stdout } = codexec(['--help']);
    expect(code).toBe(0);
    for (const command of ['serve', 'run', 'doctor']) expect(stdout).toContain(command);
  });

  it('runs a file, streams its output and passes the exit code through', () => {
    const file = join(home, 'prog.py');
    writeFileSync(file, 'import sys\nprint("args", sys.argv[1:])\nsys.exit(5)');
    const { code, stdout } = codexec(['run', file, 'a', 'b']);
    expect(stdout).toBe("args ['a', 'b']\n");
    expect(code).toBe(5);
  });

  it('reads code from stdin with --language and prints the result as JSON', () => {
    const { code, stdout } = codexec(['run', '-', '--language', 'bash', '--json'], {
      input: 'echo hi; exit 3',
    });
    expect(code).toBe(3);
    expect(JSON.parse(stdout)).toMatchObject({
      success: false,
      exit_code: 3,
      stdout: 'hi\n',
      language: 'bash',
    });
  });

  it('has code mode as execute_code has it: the helpers with mcp.json, calls with --allowed-tools', () => {
    const dir = tempDir('codexec-cli-mcp-');
    const fixture = fileURLToPath(new URL('../fixtures/mcp/tools-server.mjs', import.meta.url));
    const config = join(dir, 'mcp.json');
    writeFileSync(
      config,
      JSON.stringify({ mcpServers: { fx: { command: process.execPath, args: [fixture] } } }),
    );
    const env = { CODEXEC_MCP_CONFIG: config };
    const code = 'r = await call_mcp_tool("mcp__fx__add", {"a": 2, "b": 3})\nprint(r["sum"])';
    const allowed = codexec(['run', '-', '-l', 'python', '--allowed-tools', 'mcp__fx__add'], {
      input: code,
      env,
    });
    expect(allowed, allowed.stderr).toMatchObject({ code: 0, stdout: '5\n' });
    // Without it, the helpers are there (top-level await parses) and the call is refused inside.
    const refused = codexec(['run', '-', '-l', 'python'], {
      input: `try:\n    ${code.replace('\n', '\n    ')}\nexcept Exception as error:\n    print(type(error).__name__, getattr(error, "code", ""))`,
      env,
    });
    expect(refused.stdout).toMatch(/TOOL_NOT_ALLOWED/);
    rmSync(dir, { recursive: true, force: true });
  });

  it('infers typescript from the extension', () => {
    const file = join(home, 'prog.ts');
    writeFileSync(file, 'const n: number = 6 * 7;\nconsole.log(n)');
    expect(codexec(['run', file])).toMatchObject({ code: 0, stdout: '42\n' });
  });

  it('runs in -C <dir> with no CODEXEC_ALLOWED_PATHS (the operator named it), as its owner', () => {
    const dir = ownedDir('codexec-cli-wd-');
    try {
      const { code, stdout } = codexec(['run', '-', '-l', 'bash', '-C', dir], {
        input: 'pwd; id -u; touch made',
      });
      expect({ code, stdout }).toEqual({ code: 0, stdout: `${dir}\n${OWNER.uid}\n` });
      expect(statSync(join(dir, 'made')).uid).toBe(OWNER.uid);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.runIf(IS_ROOT)("refuses -C <dir> of root's, running nothing there", () => {
    const dir = tempDir('codexec-cli-root-');
    try {
      const { code, stderr } = codexec(['run', '-', '-l', 'bash', '-C', dir], { input: 'touch made' });
      expect(code).toBe(2);
      expect(stderr).toContain('owned by root');
      expect(existsSync(join(dir, 'made'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('stops with NAME: reason and exit 2 on an invalid setting', () => {
    const { code, stderr } = codexec(['run', '-', '-l', 'bash'], { env: { CODEXEC_MAX_SESSIONS: 'many' } });
    expect(code).toBe(2);
    expect(stderr).toMatch(/^codexec: CODEXEC_MAX_SESSIONS: /m);
    expect(codexec(['serve'], { env: { CODEXEC_NETWORK: 'wide' } })).toMatchObject({ code: 2 });
  });

  it('refuses an unknown language flag and an unknown extension clearly', () => {
    expect(codexec(['run', '-', '-l', 'cobol']).stderr).toContain('expected one of');
    const file = join(home, 'prog.xyz');
    writeFileSync(file, '');
    expect(codexec(['run', file])).toMatchObject({ code: 2, stderr: expect.stringContaining('--language') });
  });

  it('doctor exits 0 and names the interpreters', () => {
    const { code, stdout } = codexec(['doctor']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/python/);
    expect(stdout).toMatch(/node/);
  });
});
