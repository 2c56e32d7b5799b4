// Landlock checks no change of a file's mode, owner, times or extended attributes, and landlock
// mode runs code on the host's own tree. The attacks, as hostile code ran them: one run chmods
// another's workspace (found in /proc/*/cmdline) to 000 and resets its times; code working in a
// host directory as its owner chmods the owner's home 0777 and a private file 0666. A root
// server's runs now each have a uid of their own; code run as a host directory's owner makes such
// changes through descriptors only. A non-root server's runs are its user: the gap stays, measured.
import { chmodSync, chownSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { landlockAbi } from '../../src/sandbox/index.js';
import { allowing, OWNER, ownedDir } from '../helpers/host-dir.js';
import { IS_ROOT } from '../helpers/mode.js';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

interface Run {
  success: boolean;
  stdout: string;
  stderr: string;
}

/** Python that tries each change on `target` by path and prints one verdict a line. */
const tamper = (target: string) => `
import os
target = ${JSON.stringify(target)}
for name, change in [
    ("chmod", lambda: os.chmod(target, 0o777)),
    ("utime", lambda: os.utime(target, (0, 0))),
    ("chown", lambda: os.chown(target, os.getuid(), -1)),
    ("setxattr", lambda: os.setxattr(target, "user.codexec", b"x")),
]:
    try:
        change()
        print(name, "changed")
    except OSError as error:
        print(name, error.strerror)
`;

const landlock = landlockAbi() >= 1;

describe.runIf(landlock && IS_ROOT)(
  'landlock runs of a root server: one run cannot touch another’s files',
  () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startServer({ env: { CODEXEC_SANDBOX_MODE: 'landlock' } });
    });
    afterAll(() => server.close());

    it('a one-shot run cannot chmod, utime or xattr a live session’s workspace or its files', async () => {
      const session = await callTool<{ session_id: string }>(server.client, 'start_session', {
        language: 'python',
      });
      const id = session.value.session_id;
      const send = (code: string) =>
        callTool<Run>(server.client, 'send_to_session', { session_id: id, code });
      const made = await send(
        'import os\nopen("secret.txt", "w").write("mine")\nprint(os.getcwd(), os.getuid())',
      );
      const [workspace = '', sessionUid] = made.value.stdout.trim().split(' ');
      const secret = join(workspace, 'secret.txt');
      const before = { dir: statSync(workspace), file: statSync(secret) };
      for (const target of [secret, workspace]) {
        const { value } = await callTool<Run>(server.client, 'execute_code', {
          language: 'python',
          code: `import os\nprint("uid", os.getuid())\n${tamper(target)}`,
        });
        const lines = value.stdout.trim().split('\n');
        expect(lines[0]).not.toBe(`uid ${sessionUid}`);
        // Refused every one: not the owner (EPERM), or not let through the workspace at all (EACCES).
        for (const [i, name] of ['chmod', 'utime', 'chown', 'setxattr'].entries())
          expect(lines[i + 1]).toMatch(new RegExp(`^${name} (Operation not permitted|Permission denied)$`));
      }
      expect(statSync(workspace).mode).toBe(before.dir.mode);
      expect(statSync(secret).mode).toBe(before.file.mode);
      expect(statSync(secret).mtimeMs).toBe(before.file.mtimeMs);
      const read = await send('print(open("secret.txt").read())');
      expect(read.value.stdout).toBe('mine\n');
    });
  },
);

describe.runIf(landlock && IS_ROOT)('landlock: code in a host directory, run as its owner', () => {
  let server: TestServer;
  let project: string;
  let elsewhere: string;
  beforeAll(async () => {
    const root = ownedDir('codexec-metadata-root-');
    project = join(root, 'project');
    mkdirSync(project);
    chownSync(project, OWNER.uid, OWNER.gid);
    // The owner's file outside every allowed path (its home, say), private to it.
    elsewhere = join(ownedDir('codexec-metadata-home-'), 'private.txt');
    writeFileSync(elsewhere, 'private', { mode: 0o600 });
    chownSync(elsewhere, OWNER.uid, OWNER.gid);
    server = await startServer({ env: { CODEXEC_SANDBOX_MODE: 'landlock', ...allowing(root) } });
  });
  afterAll(() => server.close());

  it('cannot change the owner’s files elsewhere; changes its own through a descriptor', async () => {
    const before = statSync(elsewhere);
    const { value } = await callTool<Run>(server.client, 'execute_code', {
      language: 'python',
      working_dir: project,
      code: `${tamper(elsewhere)}
import os
open("tool.sh", "w").write("echo hi")
try:
    os.chmod("tool.sh", 0o755)
except OSError as error:
    print("by path", error.strerror)
fd = os.open("tool.sh", os.O_RDONLY)
os.fchmod(fd, 0o755)
os.utime(fd, (0, 0))
print("by descriptor", oct(os.stat("tool.sh").st_mode & 0o777), os.stat("tool.sh").st_mtime)
print("uid", os.getuid())
`,
    });
    expect(value.stdout.trim().split('\n')).toEqual([
      'chmod Operation not permitted',
      'utime Operation not permitted',
      'chown Operation not permitted',
      'setxattr Operation not permitted',
      'by path Operation not permitted',
      'by descriptor 0o755 0.0',
      `uid ${OWNER.uid}`,
    ]);
    const after = statSync(elsewhere);
    expect([after.mode, after.mtimeMs]).toEqual([before.mode, before.mtimeMs]);
    expect(statSync(join(project, 'tool.sh')).mode & 0o777).toBe(0o755);
  });
});

describe.runIf(landlock && !IS_ROOT)('landlock runs of a non-root server: the server user’s files', () => {
  let server: TestServer;
  let mine: string;
  beforeAll(async () => {
    // A file of the server's user, outside every path a run may write.
    mine = join(tempDir('codexec-metadata-user-'), 'private.txt');
    writeFileSync(mine, 'private', { mode: 0o600 });
    chmodSync(mine, 0o600);
    server = await startServer({ env: { CODEXEC_SANDBOX_MODE: 'landlock' } });
  });
  afterAll(() => server.close());

  // The documented gap (docs/security.md, at a glance): the runs are the server's user, who owns
  // the file, and Landlock checks no change of mode or times. Its content stays out of reach.
  it('CAN change their mode and times by path, but neither read nor write them', async () => {
    const { value } = await callTool<Run>(server.client, 'execute_code', {
      language: 'python',
      code: `${tamper(mine)}
for name, use in [("read", lambda: open(${JSON.stringify(mine)}).read()), ("write", lambda: open(${JSON.stringify(mine)}, "w"))]:
    try:
        use()
        print(name, "done")
    except OSError as error:
        print(name, error.strerror)
`,
    });
    const lines = value.stdout.trim().split('\n');
    expect(lines.slice(0, 2)).toEqual(['chmod changed', 'utime changed']);
    expect(lines.slice(-2)).toEqual(['read Permission denied', 'write Permission denied']);
    expect(statSync(mine).mode & 0o777).toBe(0o777);
    chmodSync(mine, 0o600);
  });
});
