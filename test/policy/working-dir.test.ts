import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { resolveWorkingDir } from '../../src/policy/index.js';
import { tempDir } from '../helpers/server.js';

describe('resolveWorkingDir', () => {
  let home = '';
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  const setup = () => {
    home = tempDir();
    return loadConfig({ CODEXEC_HOME: join(home, 'cx') });
  };

  it('accepts an ordinary directory and returns its real path', async () => {
    const config = setup();
    mkdirSync(join(home, 'work'));
    symlinkSync(join(home, 'work'), join(home, 'alias'));
    expect(await resolveWorkingDir(join(home, 'alias'), config)).toBe(join(home, 'work'));
  });

  it.each(['/etc', '/var/log', '~/.ssh', '~/.aws/x', '/proc', '/'])('refuses %s', async (path) => {
    const config = setup();
    await expect(resolveWorkingDir(path, config)).rejects.toMatchObject({ code: 'FORBIDDEN_PATH' });
  });

  it('refuses a symlink into a forbidden place, and codexec home outside its sandbox', async () => {
    const config = setup();
    symlinkSync('/etc', join(home, 'sneaky'));
    await expect(resolveWorkingDir(join(home, 'sneaky'), config)).rejects.toMatchObject({
      code: 'FORBIDDEN_PATH',
    });
    mkdirSync(join(config.home, 'logs'), { recursive: true });
    await expect(resolveWorkingDir(config.logDir, config)).rejects.toMatchObject({ code: 'FORBIDDEN_PATH' });
    mkdirSync(join(config.sandboxDir, 'mine'), { recursive: true });
    for (const dir of [config.sandboxDir, join(config.sandboxDir, 'mine')])
      await expect(resolveWorkingDir(dir, config)).rejects.toMatchObject({ code: 'FORBIDDEN_PATH' });
  });

  it('refuses a missing directory and a file with INVALID_INPUT', async () => {
    const config = setup();
    await expect(resolveWorkingDir(join(home, 'nope'), config)).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    await expect(resolveWorkingDir('/bin/sh', config)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });
});
