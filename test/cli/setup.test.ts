// `codexec setup <client>`: merges codexec into each client's
// config in a temp HOME — other servers, keys and comments kept, a .bak of the previous file,
// nothing written the second time or on --dry-run — then starts the server exactly as written and
// lists its tools.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse as parseJsonc } from 'jsonc-parser';
import { parse as parseToml } from 'smol-toml';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, tempDir } from '../helpers/server.js';

const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

function setup(home: string, ...args: string[]) {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home };
  const run = spawnSync(process.execPath, [CLI, 'setup', ...args], {
    env,
    encoding: 'utf8',
    timeout: 90_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

const CASES = [
  { client: 'claude-code', file: '.claude.json', key: 'mcpServers', typed: true },
  {
    client: 'claude-desktop',
    file: '.config/Claude/claude_desktop_config.json',
    key: 'mcpServers',
    typed: false,
  },
  { client: 'cursor', file: '.cursor/mcp.json', key: 'mcpServers', typed: false },
  { client: 'vscode', file: '.config/Code/User/mcp.json', key: 'servers', typed: true },
  { client: 'codex', file: '.codex/config.toml', key: 'mcp_servers', typed: false },
] as const;

const OTHER = { command: 'other-server', args: ['--stdio'] };

describe.each(CASES)('codexec setup $client', ({ client, file, key, typed }) => {
  const home = tempDir();
  homes.push(home);
  const path = join(home, file);
  const read = (): Record<string, Record<string, Record<string, unknown>>> =>
    file.endsWith('.toml')
      ? (parseToml(readFileSync(path, 'utf8')) as never)
      : parseJsonc(readFileSync(path, 'utf8'));

  it('merges into a config with another server, keeps it, writes a .bak, and the server works as written', () => {
    mkdirSync(dirname(path), { recursive: true });
    const original = file.endsWith('.toml')
      ? '# my codex settings\nmodel = "o4"\n\n[mcp_servers.other]\ncommand = "other-server"\nargs = ["--stdio"]\n'
      : `{\n  // my settings\n  "theme": "dark",\n  "${key}": { "other": ${JSON.stringify(OTHER)} }\n}\n`;
    writeFileSync(path, original, { mode: 0o640 });

    const first = setup(home, client, '--env', 'CODEXEC_POOL_SIZE=0');
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    expect(first.stdout).toMatch(/works: the server started as written and lists \d+ tools/);
    const config = read();
    expect(config[key]?.other).toMatchObject(OTHER);
    expect(config[key]?.codexec).toEqual({
      ...(typed && { type: 'stdio' }),
      command: process.execPath,
      args: [CLI, 'serve'],
      env: { CODEXEC_POOL_SIZE: '0' },
    });
    // The rest of the file, comments too, as it was.
    const text = readFileSync(path, 'utf8');
    expect(text).toContain(file.endsWith('.toml') ? '# my codex settings' : '// my settings');
    expect(readFileSync(`${path}.bak`, 'utf8')).toBe(original);
    expect(statSync(path).mode & 0o777).toBe(0o640);
  }, 120_000);

  it('is idempotent: the second run writes nothing and keeps the .bak', () => {
    const before = readFileSync(path, 'utf8');
    const backup = readFileSync(`${path}.bak`, 'utf8');
    const again = setup(home, client, '--env', 'CODEXEC_POOL_SIZE=0', '--no-verify');
    expect(again.status).toBe(0);
    expect(again.stdout).toContain('already set up');
    expect(readFileSync(path, 'utf8')).toBe(before);
    expect(readFileSync(`${path}.bak`, 'utf8')).toBe(backup);
  });

  it('--dry-run shows the result and writes nothing; --print shows only the entry', () => {
    const fresh = tempDir();
    homes.push(fresh);
    const dry = setup(fresh, client, '--dry-run');
    expect(dry.status).toBe(0);
    expect(dry.stdout).toContain(`would write ${join(fresh, file)}`);
    expect(dry.stdout).toContain(CLI);
    expect(existsSync(join(fresh, file))).toBe(false);
    const printed = setup(fresh, client, '--print');
    expect(printed.status).toBe(0);
    const snippet = file.endsWith('.toml') ? parseToml(printed.stdout) : JSON.parse(printed.stdout);
    expect((snippet as Record<string, Record<string, { args: string[] }>>)[key]?.codexec?.args).toEqual([
      CLI,
      'serve',
    ]);
    expect(existsSync(join(fresh, file))).toBe(false);
  });

  it('creates the file (mode 0600) when there is none', () => {
    const fresh = tempDir();
    homes.push(fresh);
    const made = setup(fresh, client, '--no-verify');
    expect(made.status).toBe(0);
    expect(statSync(join(fresh, file)).mode & 0o777).toBe(0o600);
    expect(existsSync(join(fresh, `${file}.bak`))).toBe(false);
  });
});

describe('codexec setup keeps the entries before its own as they were written', () => {
  it('a one-line neighbour stays one line, and its comments stay on their lines', () => {
    const home = tempDir();
    homes.push(home);
    const path = join(home, '.cursor', 'mcp.json');
    mkdirSync(dirname(path), { recursive: true });
    const neighbours =
      '{\n  "mcpServers": {\n    // the first\n    "a": {\n      "command": "x"\n    },\n' +
      '    // the last\n    "b": { "command": "y" } // b stays\n';
    writeFileSync(path, `${neighbours}  }\n}\n`);
    expect(setup(home, 'cursor', '--no-verify').status).toBe(0);
    const text = readFileSync(path, 'utf8');
    expect(text.startsWith(neighbours.replace('"y" } // b stays', '"y" }, // b stays'))).toBe(true);
    expect(text).toContain('\n    "codexec": {\n      "command": ');
    // A trailing comma the file had is kept, not doubled.
    writeFileSync(path, '{\n  "mcpServers": {\n    "a": { "command": "x" },\n  },\n}\n');
    expect(setup(home, 'cursor', '--no-verify').status).toBe(0);
    expect(readFileSync(path, 'utf8')).toMatch(
      /^\{\n {2}"mcpServers": \{\n {4}"a": \{ "command": "x" \},\n {4}"codexec": \{/,
    );
  });
});

describe('codexec setup checks what it writes', () => {
  it("says so (exit 1, with the server's own words) when the server as written does not start; writes nothing", () => {
    const home = tempDir();
    homes.push(home);
    const path = join(home, '.cursor', 'mcp.json');
    mkdirSync(dirname(path), { recursive: true });
    const before = '{\n  "mcpServers": {\n    // mine\n    "other": { "command": "x" }\n  }\n}\n';
    writeFileSync(path, before);
    const bad = setup(home, 'cursor', '--env', 'CODEXEC_SANDBOX_MODE=bogus');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('the server as written does not answer');
    expect(bad.stderr).toContain('CODEXEC_SANDBOX_MODE');
    expect(bad.stderr).toContain('(nothing written)');
    expect(readFileSync(path, 'utf8')).toBe(before); // no broken entry left behind
    expect(existsSync(`${path}.bak`)).toBe(false);
  }, 60_000);
});

describe('codexec setup refusals', () => {
  it('an unknown client, a broken config file and a bad --env are exit 2, naming them; nothing written', () => {
    const home = tempDir();
    homes.push(home);
    expect(setup(home, 'emacs').stderr).toContain('unknown client "emacs"');
    const path = join(home, '.cursor', 'mcp.json');
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, '{ "mcpServers": ');
    const broken = setup(home, 'cursor');
    expect(broken.status).toBe(2);
    expect(broken.stderr).toContain(`${path} is not valid JSON`);
    expect(readFileSync(path, 'utf8')).toBe('{ "mcpServers": ');
    const env = setup(home, 'codex', '--env', 'NOEQUALS');
    expect(env.status).toBe(2);
    expect(env.stderr).toContain('expected KEY=VALUE');
  });
});

describe('codexec setup --project', () => {
  it('adds the project directory to CODEXEC_ALLOWED_PATHS, after those given, and refuses a missing one', () => {
    const home = tempDir();
    homes.push(home);
    const project = join(home, 'project');
    mkdirSync(project);
    const printed = setup(
      home,
      'cursor',
      '--print',
      '--env',
      'CODEXEC_ALLOWED_PATHS=/srv/data',
      '--project',
      project,
    );
    expect(printed.status).toBe(0);
    const entry = (
      JSON.parse(printed.stdout) as { mcpServers: Record<string, { env: Record<string, string> }> }
    ).mcpServers.codexec;
    expect(entry?.env.CODEXEC_ALLOWED_PATHS).toBe(`/srv/data,${project}`);
    const missing = setup(home, 'cursor', '--print', '--project', join(home, 'nope'));
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('no such directory');
  });
});
