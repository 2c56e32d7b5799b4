// A root server with the default home (`~/.codexec`, CODEXEC_HOME unset) where `~` is 0700, as
// /root is in most containers: its landlock runs (uids of their own, group nogroup, on the host's
// own tree) could not reach a workspace under it. Its runs live under /var/lib/codexec/runs/<id>
// instead, lent search for that group alone; its home stays closed and keeps the rest (logs, scripts).
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, runRoots } from '../../src/config/index.js';
import { SHARED_RUN_BASE } from '../../src/config/paths.js';
import { landlockAbi } from '../../src/sandbox/landlock/index.js';
import { isRunUid, RUN_GID } from '../../src/sandbox/landlock/uids.js';
import { IS_ROOT } from '../helpers/mode.js';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

interface Run {
  success: boolean;
  stdout: string;
  stderr: string;
  sandbox_mode: string;
}

/** Whether `uid` in group `gid` can stat `path` (search every directory above it). */
const stats = (path: string, uid: number | string = 65534, gid: number = 65534) => {
  try {
    execFileSync('/usr/bin/setpriv', [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', 'stat', path], {
      stdio: 'ignore',
    });
    return true;
  } catch {
    return false;
  }
};
const nobodyStats = (path: string) => stats(path);
/** A uid of a run's own (landlock/uids.ts), not nobody's. */
const runUid = (uid: string | undefined) => isRunUid(Number(uid)) && uid !== '65534';

describe.runIf(IS_ROOT)('where a root server keeps its runs', () => {
  let user: string;
  beforeAll(() => {
    user = tempDir('codexec-root-home-');
    chmodSync(user, 0o700);
  });
  afterAll(() => rmSync(user, { recursive: true, force: true }));

  it('its default home, when others may search every directory above it', () => {
    const open = tempDir('codexec-open-home-');
    try {
      chmodSync(open, 0o755);
      const config = loadConfig({}, () => {}, open);
      expect(config.runHome).toBe(config.home);
      expect(config.sandboxDir).toBe(join(open, '.codexec', 'sandbox'));
    } finally {
      rmSync(open, { recursive: true, force: true });
    }
  });

  it('a directory of its own under /var/lib/codexec when one above the default home is closed', () => {
    const config = loadConfig({}, () => {}, user);
    expect(config.home).toBe(join(user, '.codexec'));
    expect(dirname(config.runHome)).toBe(join(SHARED_RUN_BASE, 'runs'));
    expect(config.runHome).toMatch(/\/[0-9a-f]{16}$/);
    expect(config.sandboxDir).toBe(join(config.runHome, 'sandbox'));
    expect(config.envsDir).toBe(join(config.runHome, 'envs'));
    expect(config.command.workspace).toBe(join(config.runHome, 'workspace'));
    // The rest of its state stays at home.
    expect(config.logDir).toBe(join(user, '.codexec', 'logs'));
    expect(config.scriptsDir).toBe(join(user, '.codexec', 'scripts'));
    // codexec's own to lend search on: the base, not the home (nothing runs beneath it).
    expect(runRoots(config)).not.toContain(config.home);
    expect(runRoots(config)[0]).toBe(SHARED_RUN_BASE);
    // Settings say otherwise: they win, and a home that was set is where runs live.
    expect(loadConfig({ CODEXEC_SANDBOX_DIR: '/srv/runs' }, () => {}, user).sandboxDir).toBe('/srv/runs');
    expect(loadConfig({ CODEXEC_HOME: join(user, 'set') }, () => {}, user).runHome).toBe(join(user, 'set'));
  });
});

describe.runIf(IS_ROOT && landlockAbi() >= 1)('a root server with the default home in landlock mode', () => {
  let user: string;
  let server: TestServer;
  let runHome: string;

  beforeAll(async () => {
    user = tempDir('codexec-root-home-');
    chmodSync(user, 0o700);
    runHome = loadConfig({}, () => {}, user).runHome;
    // CODEXEC_HOME empty is CODEXEC_HOME unset: the default home under HOME.
    server = await startServer({ env: { HOME: user, CODEXEC_HOME: '', CODEXEC_SANDBOX_MODE: 'landlock' } });
  });

  afterAll(async () => {
    await server?.close();
    rmSync(user, { recursive: true, force: true });
    if (runHome) rmSync(runHome, { recursive: true, force: true });
    // The shared base and its runs/ stay only if another server's runs are there.
    for (const dir of [dirname(runHome), SHARED_RUN_BASE]) {
      if (existsSync(dir) && readdirSync(dir).length === 0) rmdirSync(dir);
    }
  });

  it('runs code (one-shot runs, a session, a command) as uids of their own, its home still closed', async () => {
    const code = 'import os; print(os.getuid(), os.getcwd())';
    const uids = new Set<string | undefined>();
    for (let i = 0; i < 2; i++) {
      const { value } = await callTool<Run>(server.client, 'execute_code', { language: 'python', code });
      expect(value).toMatchObject({ success: true, sandbox_mode: 'landlock', stderr: '' });
      const [uid, cwd] = value.stdout.trim().split(' ');
      expect(runUid(uid)).toBe(true);
      uids.add(uid);
      expect(cwd?.startsWith(join(runHome, 'sandbox', 'exec_'))).toBe(true);
    }
    const bash = await callTool<Run>(server.client, 'execute_code', { language: 'bash', code: 'id -u; pwd' });
    const [bashUid, bashCwd] = bash.value.stdout.split('\n');
    expect(runUid(bashUid)).toBe(true);
    uids.add(bashUid);
    expect(bashCwd).toMatch(new RegExp(`^${join(runHome, 'sandbox')}/exec_[0-9a-f]{12}$`));
    const session = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'python',
    });
    expect(session.isError).toBe(false);
    const sent = await callTool<Run>(server.client, 'send_to_session', {
      session_id: session.value.session_id,
      code: 'import os\nopen("kept.txt", "w").write("x")\nprint(os.getuid(), os.getcwd())',
    });
    const [sessionUid, sessionCwd] = sent.value.stdout.trim().split(' ');
    expect(runUid(sessionUid)).toBe(true);
    uids.add(sessionUid);
    expect(sessionCwd).toBe(join(runHome, 'sandbox', session.value.session_id));
    const command = await callTool<Run>(server.client, 'execute_command', { command: 'id -u; pwd' });
    const [commandUid, commandCwd] = command.value.stdout.split('\n');
    expect(runUid(commandUid)).toBe(true);
    uids.add(commandUid);
    expect(commandCwd).toBe(join(runHome, 'workspace'));
    // No two of the five had one uid: four one-shot runs ended and gave theirs back, but a uid just
    // returned is the last to come again.
    expect(uids.size).toBe(5);
    // The server's state is at home, which no other user may enter; its logs are there.
    expect(existsSync(join(user, '.codexec', 'logs'))).toBe(true);
    expect(statSync(user).mode & 0o777).toBe(0o700);
    expect(nobodyStats(join(user, '.codexec'))).toBe(false);
    // The session's files: its own uid reaches them; another run's uid, or nobody, does not.
    const kept = join(runHome, 'sandbox', session.value.session_id, 'kept.txt');
    expect(stats(kept, sessionUid, RUN_GID)).toBe(true);
    expect(stats(kept, Number(sessionUid) + 1, RUN_GID)).toBe(false);
    expect(nobodyStats(kept)).toBe(false);
  });
});
