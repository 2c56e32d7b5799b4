import { mkdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Config, loadConfig } from '../../src/config/index.js';
import { checkCommand, HostDirs, loadShellParser, openCommandDir } from '../../src/policy/index.js';
import { tempDir } from '../helpers/server.js';

beforeAll(() => loadShellParser());

describe('checkCommand', () => {
  const refusal = (command: string, lists: Parameters<typeof checkCommand>[1]) => {
    try {
      checkCommand(command, lists);
      return undefined;
    } catch (error) {
      return error as { code: string; pattern: string };
    }
  };

  it('lets everything through with no lists', () => {
    expect(refusal('anything at all', {})).toBeUndefined();
  });

  it('matches from the start only, like re.match', () => {
    const lists = { allowedCommands: ['python.*', 'pytest.*'] };
    for (const ok of ['python', 'python -m pytest', 'pytest', 'pytest -v tests/'])
      expect(refusal(ok, lists)).toBeUndefined();
    expect(refusal('echo python', lists)?.code).toBe('COMMAND_BLOCKED');
    // the seed's trap: "pytest .*" needs the space, so a bare pytest does not match
    expect(refusal('pytest', { blockedCommands: ['pytest .*'] })).toBeUndefined();
    expect(refusal('pytest -v', { blockedCommands: ['pytest .*'] })).toMatchObject({ pattern: 'pytest .*' });
  });

  it('checks the blocklist before the allowlist and names the pattern', () => {
    const lists = { allowedCommands: ['git.*'], blockedCommands: ['git push.*'] };
    expect(refusal('git status', lists)).toBeUndefined();
    expect(refusal('git push -f', lists)).toMatchObject({ code: 'COMMAND_BLOCKED', pattern: 'git push.*' });
  });

  it('treats an empty allowlist as allowing nothing, an empty blocklist as blocking nothing', () => {
    expect(refusal('true', { allowedCommands: [] })?.code).toBe('COMMAND_BLOCKED');
    expect(refusal('true', { blockedCommands: [] })).toBeUndefined();
  });
});

describe('command settings', () => {
  let home = '';
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it('reads CODEXEC_ALLOWED_PATHS as a comma list or a JSON array, and the lists as JSON arrays', () => {
    home = tempDir();
    const base = { CODEXEC_HOME: home };
    expect(loadConfig({ ...base, CODEXEC_ALLOWED_PATHS: '/srv/a, /srv/b' }).command.allowedPaths).toEqual([
      '/srv/a',
      '/srv/b',
    ]);
    expect(loadConfig({ ...base, CODEXEC_ALLOWED_PATHS: '["/srv/a,b"]' }).command.allowedPaths).toEqual([
      '/srv/a,b',
    ]);
    const config = loadConfig({
      ...base,
      CODEXEC_ALLOWED_COMMANDS: '["ls.*"]',
      CODEXEC_BLOCKED_COMMANDS: '[]',
    });
    expect(config.command).toMatchObject({
      workspace: join(home, 'workspace'),
      allowedCommands: ['ls.*'],
      blockedCommands: [],
    });
    expect(loadConfig(base).command.allowedCommands).toBeUndefined();
  });
});

describe('openCommandDir', () => {
  let home = '';
  afterEach(() => rmSync(home, { recursive: true, force: true }));
  const open = async (workDir: string | undefined, config: Config) => {
    const held = await openCommandDir(workDir, config, new HostDirs(config));
    held.close();
    return held.path;
  };

  it('makes the workspace on first use and opens relative work_dirs in it', async () => {
    home = tempDir();
    const config = loadConfig({ CODEXEC_HOME: join(home, 'cx') });
    const workspace = await open(undefined, config);
    expect(workspace).toBe(join(realpathSync(home), 'cx/workspace'));
    mkdirSync(join(workspace, 'a/b'), { recursive: true });
    expect(await open('a/b', config)).toBe(join(workspace, 'a/b'));
    expect(await open(join(workspace, 'a'), config)).toBe(join(workspace, 'a'));
  });

  it('refuses a symlink and ".." beneath the workspace', async () => {
    home = tempDir();
    const config = loadConfig({ CODEXEC_HOME: join(home, 'cx') });
    const workspace = await open(undefined, config);
    symlinkSync('/etc', join(workspace, 'etc'));
    await expect(open('etc', config)).rejects.toMatchObject({ code: 'FORBIDDEN_PATH' });
    await expect(open('../..', config)).rejects.toMatchObject({ code: 'FORBIDDEN_PATH' });
  });

  it('an absolute work_dir elsewhere is a host directory: CODEXEC_ALLOWED_PATHS and its rules', async () => {
    home = tempDir();
    const cx = join(home, 'cx');
    mkdirSync(join(cx, 'envs'), { recursive: true });
    await expect(open(home, loadConfig({ CODEXEC_HOME: cx }))).rejects.toMatchObject({
      code: 'FORBIDDEN_PATH',
    });
    const config = loadConfig({ CODEXEC_HOME: cx, CODEXEC_ALLOWED_PATHS: '/' });
    await expect(open(join(cx, 'envs'), config)).rejects.toMatchObject({ code: 'FORBIDDEN_PATH' });
    await expect(open('/etc/ssl', config)).rejects.toMatchObject({ code: 'FORBIDDEN_PATH' });
    // a directory holding codexec's home is refused: the command could reach it by a relative path
    await expect(open(home, config)).rejects.toMatchObject({ code: 'FORBIDDEN_PATH' });
  });
});
