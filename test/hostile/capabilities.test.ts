// Hostile code reads its own capability sets: in namespace mode all five are empty in
// every way code starts — a one-shot cold run, a warm one (pre-started, or forked from the
// zygote), a REPL session — in every language, whether the server runs as root (bwrap privileged,
// then the drop program) or not (bwrap in a user namespace). In landlock mode the same, but for a
// non-root server's bounding set (see expected()). In subprocess mode the code keeps
// the server's own, which this asserts too (docs/security.md says so from this run).
import { chownSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowing, ownedDir } from '../helpers/host-dir.js';
import { callTool } from '../helpers/server.js';
import { DOCKER_MODE, ensureImage, GVISOR, serverRuntime } from '../sandbox/container/engine.js';
import { type Rig, run, startRig } from './probes.js';

const root = process.getuid?.() === 0;
const SETS = ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'] as const;
const EMPTY = Object.fromEntries(SETS.map((name) => [name, '0000000000000000']));

const READ: Record<string, string> = {
  python: `print("".join(l for l in open("/proc/self/status") if l.startswith(("Cap", "NoNewPrivs"))))`,
  node: `console.log(require("node:fs").readFileSync("/proc/self/status", "utf8"))`,
  typescript: `const status: string = require("node:fs").readFileSync("/proc/self/status", "utf8"); console.log(status)`,
  bash: 'grep -E "^(Cap|NoNewPrivs)" /proc/self/status',
};
const LANGUAGES = Object.keys(READ);

/** The five sets from /proc/self/status text. */
function sets(stdout: string): Record<string, string | undefined> {
  const found: Record<string, string | undefined> = {};
  for (const name of SETS) found[name] = new RegExp(`^${name}:\\s*([0-9a-f]{16})$`, 'm').exec(stdout)?.[1];
  return found;
}

// '(non-root)': the server itself runs as uid 65534 (namespace: bwrap in a user namespace).
const MODES = [
  'namespace',
  'landlock',
  ...(root ? ['namespace (non-root)', 'landlock (non-root)'] : []),
  'docker',
  ...(GVISOR.missing ? [] : ['docker (gVisor)']),
  'subprocess',
] as const;
if (GVISOR.missing) console.warn(`capability sets under gVisor skipped: ${GVISOR.missing}`);

describe.each(MODES)('capability sets of the code (%s mode)', (label) => {
  const confined = label !== 'subprocess';
  const mode = label.split(' ')[0] as string;
  const nonRoot = label.endsWith('(non-root)');
  const gvisor = label === 'docker (gVisor)';
  let rig: Rig;
  let coldDir: string;

  beforeAll(async () => {
    if (mode === 'docker') ensureImage();
    // A working_dir never gets a warm process: a run there starts cold. A host directory beneath
    // CODEXEC_ALLOWED_PATHS, an ordinary user's (whom a root server runs the code as), or the
    // non-root server's own.
    coldDir = ownedDir('codexec-cold-');
    if (nonRoot) chownSync(coldDir, 65534, 65534);
    const allowed = allowing(coldDir);
    rig = nonRoot
      ? await startRig({ CODEXEC_SANDBOX_MODE: mode, ...allowed }, 65534)
      : mode === 'docker'
        ? await startRig({ ...(gvisor ? GVISOR.env : DOCKER_MODE), ...allowed })
        : await startRig({ CODEXEC_SANDBOX_MODE: mode, ...allowed });
  });

  afterAll(async () => {
    await rig.close();
    rmSync(coldDir, { recursive: true, force: true });
  });

  const expected = (stdout: string) => {
    // A non-root server cannot empty a bounding set (that takes CAP_SETPCAP): its landlock runs keep
    // the server's, and no_new_privs keeps any exec from gaining from it (setuid, file capabilities).
    if (mode === 'landlock' && nonRoot) {
      expect({ ...sets(stdout), CapBnd: EMPTY.CapBnd }).toEqual(EMPTY);
      expect(stdout).toMatch(/^NoNewPrivs:\s*1$/m);
    } else if (gvisor) {
      // gVisor's /proc/self/status has no CapAmb line (it keeps no ambient set); the four it has are empty.
      expect(sets(stdout)).toEqual({ ...EMPTY, CapAmb: undefined });
      expect(stdout).not.toMatch(/^CapAmb:/m);
    } else if (confined) expect(sets(stdout)).toEqual(EMPTY);
    // The server's own sets: as root, everything it has.
    else expect(sets(stdout).CapEff !== EMPTY.CapEff).toBe(root);
  };

  it.runIf(gvisor)('runs its containers under gVisor (runsc)', async () => {
    expect(await serverRuntime(rig.server)).toBe('runsc');
  });

  it.each(LANGUAGES)('%s, one-shot, cold', async (language) => {
    const result = await run(rig, language, READ[language] as string, { working_dir: coldDir });
    expect(result.warm).toBe(false);
    expect(result.sandbox_mode).toBe(mode);
    expected(result.stdout);
  });

  it.each(LANGUAGES)(
    '%s, one-shot, warm',
    async (language) => {
      // The first run of a language warms its pool; a later one takes a warm process.
      // Poll until one is warm: a pool's start (a gVisor container on a busy machine) takes its time.
      const deadline = Date.now() + 60_000;
      let result = await run(rig, language, READ[language] as string);
      while (!result.warm && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250)); // the poll's interval
        result = await run(rig, language, READ[language] as string);
      }
      expect(result.warm).toBe(true);
      expected(result.stdout);
    },
    120_000,
  );

  it.each(LANGUAGES)(
    '%s, session',
    async (language) => {
      const start = () => callTool<{ session_id: string }>(rig.server.client, 'start_session', { language });
      let started = await start();
      // A driver gets a fixed time to say it is ready; a TypeScript driver under gVisor on a busy
      // machine can overrun it. What this asserts is the session's capability sets, not its start-up
      // time: a start that only ran out of time is tried once more; any other refusal fails here.
      if (started.isError && /did not start within/.test(started.text)) started = await start();
      expect(started.isError, started.text).toBe(false);
      const sent = await callTool<{ stdout: string; success: boolean }>(
        rig.server.client,
        'send_to_session',
        {
          session_id: started.value.session_id,
          code: READ[language],
        },
      );
      expect(sent.value.success).toBe(true);
      expected(sent.value.stdout);
      await callTool(rig.server.client, 'close_session', { session_id: started.value.session_id });
    },
    120_000,
  );
});
