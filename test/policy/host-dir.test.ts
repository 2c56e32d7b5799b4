import { chownSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { HostDirs } from '../../src/policy/index.js';
import { OWNER } from '../helpers/host-dir.js';
import { tempDir } from '../helpers/server.js';

describe('HostDirs.open', () => {
  let home = '';
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  /** A server's view with `roots` allowed, as a root server (uid 0) unless said. */
  const setup = (roots: string[] = [], uid = 0) => {
    home = realpathSync(tempDir());
    const config = loadConfig({
      CODEXEC_HOME: join(home, 'cx'),
      ...(roots.length > 0 && { CODEXEC_ALLOWED_PATHS: roots.join(',') }),
    });
    return new HostDirs(config, uid);
  };
  /** Allowed root `root`, codexec's home inside it. */
  const setupAt = (root: string, uid = process.getuid?.() ?? 0) =>
    new HostDirs(loadConfig({ CODEXEC_HOME: join(root, 'cx'), CODEXEC_ALLOWED_PATHS: root }), uid);
  const owned = (path: string) => {
    mkdirSync(path, { recursive: true });
    chownSync(path, OWNER.uid, OWNER.gid);
    return path;
  };
  const refusal = (dirs: HostDirs, path: string) => {
    try {
      dirs.open(path, 'working_dir').close();
      return undefined;
    } catch (error) {
      return error as { code: string; message: string };
    }
  };

  it('refuses every path when no root is allowed, naming the setting', () => {
    const dirs = setup();
    expect(refusal(dirs, home)).toMatchObject({ code: 'FORBIDDEN_PATH' });
    expect(refusal(dirs, home)?.message).toContain('CODEXEC_ALLOWED_PATHS');
  });

  it.runIf(process.getuid?.() === 0)(
    "holds an ordinary user's directory by descriptor and runs code as its owner",
    () => {
      const root = realpathSync(tempDir());
      const allowed = setupAt(root, 0);
      const work = owned(join(root, 'work'));
      symlinkSync(work, join(root, 'alias'));
      const held = allowed.open(join(root, 'alias'), 'working_dir');
      expect(held.path).toBe(work);
      // uid 4242 has no account here: no primary group of its own, so nobody's.
      expect(held.host?.runAs).toEqual({ uid: OWNER.uid, gid: 65534 });
      held.close();
      // Never the directory's group, whoever chose it (root, disk, docker, shadow …).
      for (const gid of [0, 6, 27, 42, 4242]) {
        chownSync(work, OWNER.uid, gid);
        const grouped = allowed.open(work, 'working_dir');
        expect(grouped.host?.runAs).toEqual({ uid: OWNER.uid, gid: 65534 });
        grouped.close();
      }
      // A root-owned one and a system account's are refused.
      mkdirSync(join(root, 'sys'));
      expect(refusal(allowed, join(root, 'sys'))?.message).toContain('owned by root');
      for (const uid of [33, 65534, 65535, 4294967294]) {
        chownSync(join(root, 'sys'), uid, 33);
        expect(refusal(allowed, join(root, 'sys'))?.message).toContain('system account');
      }
      rmSync(root, { recursive: true, force: true });
    },
  );

  it('an ordinary user server runs code in its own directories as itself', () => {
    const root = realpathSync(tempDir());
    const dirs = setupAt(root, 1234);
    mkdirSync(join(root, 'w'));
    const held = dirs.open(join(root, 'w'), 'work_dir');
    expect(held.host).toEqual({});
    held.close();
    rmSync(root, { recursive: true, force: true });
  });

  it.each(['/etc', '/var/log', '/proc', '/'])('refuses %s even beneath an allowed /', (path) => {
    const dirs = setup(['/']);
    expect(refusal(dirs, path)).toMatchObject({ code: 'FORBIDDEN_PATH' });
  });

  it("refuses a symlink on the way, codexec's own directories, a relative path, a missing one and a file", () => {
    const root = join(realpathSync(tempDir()), 'r');
    mkdirSync(root);
    const dirs = setupAt(root);
    owned(join(root, 'real', 'deep'));
    symlinkSync(join(root, 'real'), join(root, 'link'));
    symlinkSync('/etc', join(root, 'etc'));
    expect(refusal(dirs, join(root, 'etc'))).toMatchObject({ code: 'FORBIDDEN_PATH' });
    mkdirSync(join(root, 'cx', 'sandbox', 'exec_x'), { recursive: true });
    expect(refusal(dirs, join(root, 'cx', 'sandbox', 'exec_x'))).toMatchObject({ code: 'FORBIDDEN_PATH' });
    expect(refusal(dirs, 'relative/dir')).toMatchObject({ code: 'INVALID_INPUT' });
    expect(refusal(dirs, join(root, 'nope'))).toMatchObject({ code: 'INVALID_INPUT' });
    writeFileSync(join(root, 'file'), 'x');
    expect(refusal(dirs, join(root, 'file'))).toMatchObject({ code: 'FORBIDDEN_PATH' });
    rmSync(join(root, '..'), { recursive: true, force: true });
  });

  it('refuses a directory inside or around a live one; the same one is shared; closing frees it', () => {
    const root = realpathSync(tempDir());
    const dirs = setupAt(root);
    const a = owned(join(root, 'x', 'a'));
    owned(join(root, 'x'));
    const inner = owned(join(a, 'in'));
    const held = dirs.open(a, 'working_dir');
    expect(refusal(dirs, join(root, 'x'))?.message).toContain('another live run or session');
    expect(refusal(dirs, inner)?.message).toContain('another live run or session');
    expect(refusal(dirs, a)).toBeUndefined();
    held.close();
    expect(refusal(dirs, join(root, 'x'))).toBeUndefined();
    rmSync(root, { recursive: true, force: true });
  });
});
