// A server killed with SIGKILL: nothing it started outlives it, with no next
// server to clean up; what it wrote stays valid (the script library, the JSONL logs but for a torn
// last line); and the next server on the same CODEXEC_HOME catches the search index up and removes
// what the dead one left (its run cgroups, its workspaces).
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findCgroups } from '../../src/sandbox/host/cgroup-layout.js';
import { processesUnder, processesWith, sleepMarker } from '../helpers/procs.js';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';
import { startRig } from '../hostile/probes.js';
import { KEEP_ALL } from '../logs/fixtures.js';
import { processTree, waitUntil } from '../sessions/helpers.js';

const root = process.getuid?.() === 0;
const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

/** A process by pid and start time: a pid the kernel reuses later is not the same process. */
interface Proc {
  readonly pid: number;
  readonly start: string;
  readonly argv: string;
}

function identify(pid: number): Proc | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z') return undefined;
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
    return { pid, start: fields[19] ?? '', argv };
  } catch {
    return undefined;
  }
}

const stillAlive = (proc: Proc) => identify(proc.pid)?.start === proc.start;

/** Everything the server started (its process tree) and anything running for its home. */
function everythingOf(server: TestServer): Proc[] {
  const pids = new Set([...processTree(server.pid), ...processesUnder(server.home)]);
  pids.delete(server.pid);
  return [...pids].map(identify).filter((proc): proc is Proc => proc !== undefined);
}

/** SIGKILL the server; true once nothing of it is left (10 s at most), else what is. */
async function killAndWait(server: TestServer, markers: readonly string[] = []): Promise<string[]> {
  const before = everythingOf(server);
  process.kill(server.pid, 'SIGKILL');
  const left = () => [
    ...before.filter(stillAlive).map((proc) => `${proc.pid} ${proc.argv.slice(0, 160)}`),
    ...processesUnder(server.home).map((pid) => `${pid} (under home)`),
    ...markers.flatMap((marker) => processesWith(marker).map((pid) => `${pid} (sleep ${marker})`)),
  ];
  await waitUntil(() => left().length === 0, 10_000);
  await server.close().catch(() => {});
  return left();
}

/** A small seeded generator (mulberry32): the same kill moments on every run of the suite. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const CODE: Record<string, (marker: string) => string> = {
  python: (m) => `import subprocess\nprint("py")\nsubprocess.run(["sleep", "${m}"])`,
  node: (m) => `console.log("js"); require("node:child_process").spawnSync("sleep", ["${m}"])`,
  typescript: (m) =>
    `const n: string = "ts"; console.log(n); require("node:child_process").spawnSync("sleep", ["${m}"])`,
  bash: (m) => `echo sh; sleep ${m}`,
};
const LANGUAGES = Object.keys(CODE);
const EXT: Record<string, string> = { python: 'py', node: 'js', typescript: 'ts', bash: 'sh' };

describe.runIf(root)('a server killed with SIGKILL', () => {
  // As root: bwrap privileged, launchers forked by the forker, warm Python forked by the zygote.
  // As a regular user (65534): bwrap in a user namespace, started by the server itself.
  // In subprocess mode (run by root): plain process groups, which a reaper kills.
  it.each(['root', 'a regular user', 'root in subprocess mode'])(
    'takes everything it started with it, run by %s: warm processes, sessions, runs in flight, its helpers',
    async (who) => {
      const mode = who.endsWith('subprocess mode') ? 'subprocess' : 'namespace';
      const rig =
        who === 'a regular user' ? await startRig({ CODEXEC_SANDBOX_MODE: mode }, 65534) : undefined;
      const home = tempDir();
      homes.push(home);
      const server = rig?.server ?? (await startServer({ home, env: { CODEXEC_SANDBOX_MODE: mode } }));
      try {
        // Every kind of process a server starts: a run per language (warms each pool, and as root
        // starts the forker and the zygote), a session per language, a run per language going on.
        for (const language of LANGUAGES) {
          const { value } = await callTool(server.client, 'execute_code', {
            language,
            code: CODE[language]?.('0'),
          });
          expect(value).toMatchObject({ success: true, sandbox_mode: mode });
        }
        for (const language of LANGUAGES) {
          const started = await callTool(server.client, 'start_session', { language });
          expect(started.isError).toBe(false);
        }
        const marker = sleepMarker();
        for (const language of LANGUAGES)
          void callTool(server.client, 'execute_code', { language, code: CODE[language]?.(marker) }).catch(
            () => {},
          );
        expect(await waitUntil(() => processesWith(marker).length === LANGUAGES.length, 30_000)).toBe(true);
        const argv = everythingOf(server).map((proc) => proc.argv);
        // The scenario is real: each kind is there before the kill.
        // As root the node template (zygote_node.mjs) is there too, and a warm node may be its fork,
        // whose argv is the template's: either name stands for the warm node.
        const helpers = who === 'root' ? ['drivers/zygote.py', 'drivers/forker.py', 'zygote_node.mjs'] : [];
        if (mode === 'subprocess') helpers.push('"-$group"'); // the reaper's script
        const warmNode = who === 'root' ? 'warm_node.mjs|zygote_node.mjs' : 'warm_node.mjs';
        for (const part of [
          ...helpers,
          warmNode,
          'warm_bash.sh',
          'node_driver.mjs',
          'bash_driver.sh',
          'python_driver.py',
        ]) {
          expect(
            argv.some((line) => part.split('|').some((name) => line.includes(name))),
            part,
          ).toBe(true);
        }
        expect(await killAndWait(server, [marker])).toEqual([]);
      } finally {
        await rig?.close();
      }
    },
  );

  it('at any moment of concurrent saves, runs and session starts: nothing outlives it, the library and logs stay valid, the next server catches up and sweeps', async () => {
    const home = tempDir();
    homes.push(home);
    const next = random(17);
    const saved = new Set<string>();
    const dead: number[] = [];
    let cgroupParents: string[] = [];
    for (let round = 0; round < 8; round++) {
      const server = await startServer({ home, env: KEEP_ALL });
      const marker = sleepMarker();
      if (round === 0) {
        // What the checks below count, made before any kill: a loaded machine may finish nothing
        // in a round's random window.
        const [save, run, session] = await Promise.all([
          callTool(server.client, 'save_script', {
            name: 'first',
            description: 'first',
            language: 'bash',
            code: 'true',
          }),
          callTool(server.client, 'execute_code', { language: 'bash', code: 'true' }),
          callTool(server.client, 'start_session', { language: 'bash' }),
        ]);
        expect([save.isError, run.isError, session.isError]).toEqual([false, false, false]);
        saved.add('first');
      }
      const killAt = Date.now() + 100 + Math.floor(next() * 1500);
      // A burst first: with no launcher ready yet, each sandbox starts directly, a window in which a
      // killed server's sandbox still being built used to go on and run its code, owned by nobody.
      const work: Array<Promise<unknown>> = LANGUAGES.flatMap((language) => [
        callTool(server.client, 'execute_code', { language, code: CODE[language]?.(marker) }),
        callTool(server.client, 'start_session', { language }),
      ]);
      for (let i = 0; Date.now() < killAt; i++) {
        const language = LANGUAGES[Math.floor(next() * LANGUAGES.length)] as string;
        const pick = next();
        const name = `r${round}_${i}`;
        if (pick < 0.4) {
          work.push(
            callTool(server.client, 'save_script', {
              name,
              description: `script ${name}`,
              language,
              code: `${CODE[language]?.('0')}\n# ${'x'.repeat(Math.floor(next() * 4000))}`,
            }).then(({ isError }) => {
              if (!isError) saved.add(name);
            }),
          );
        } else if (pick < 0.85) {
          const code = pick < 0.6 ? CODE[language]?.('0') : CODE[language]?.(marker);
          work.push(callTool(server.client, 'execute_code', { language, code }));
        } else {
          work.push(callTool(server.client, 'start_session', { language }));
        }
        await new Promise((resolve) => setTimeout(resolve, 20 + next() * 80));
      }
      for (const call of work) call.catch(() => {});
      cgroupParents = runCgroupParents(server.pid);
      expect(await killAndWait(server, [marker]), `round ${round}`).toEqual([]);
      dead.push(server.pid);
      checkLibrary(home, saved);
      checkLogs(home);
    }

    // The next server: the index holds every execution the JSONL holds, the dead servers' run
    // cgroups are gone and so are the workspaces of their runs.
    const left = workspaces(home);
    expect(left.length).toBeGreaterThan(0); // warm pools' and sessions' at least
    const server = await startServer({ home, env: KEEP_ALL });
    try {
      const logged = loggedExecutions(home);
      expect(logged.size).toBeGreaterThan(0);
      expect(saved.size).toBeGreaterThan(0);
      const found = await callTool<{ results: Array<{ execution_id: string }>; total_count: number }>(
        server.client,
        'search_execution_logs',
        { limit: 500 },
      );
      expect(new Set(found.value.results.map((r) => r.execution_id))).toEqual(logged);
      const scripts = await callTool<{ scripts: Array<{ name: string }> }>(server.client, 'list_scripts', {});
      const listed = new Set(scripts.value.scripts.map((s) => s.name));
      expect([...saved].filter((name) => !listed.has(name))).toEqual([]);
      // A run starts the sweeps (cgroups at the backend's start, workspaces from the first run on,
      // once they are older than a live server's could be while it starts their process).
      const { value } = await callTool(server.client, 'execute_code', {
        language: 'bash',
        code: 'echo sweep',
      });
      expect(value.success).toBe(true);
      expect(cgroupsOf(dead, cgroupParents)).toEqual([]);
      const leftover = () => workspaces(home).filter((dir) => left.includes(dir));
      // A sweep that found some too young runs again 5 s later, on a run: one a second.
      let nudged = Date.now();
      const swept = await waitUntil(() => {
        if (leftover().length === 0) return true;
        if (Date.now() - nudged >= 1000) {
          nudged = Date.now();
          void callTool(server.client, 'execute_code', { language: 'bash', code: 'true' }).catch(() => {});
        }
        return false;
      }, 30_000);
      expect(swept ? [] : leftover()).toEqual([]);
    } finally {
      await server.close();
    }
  }, 300_000);
});

/**
 * Every save the server answered has its folder: metadata.json and code, which parse (the
 * library's truth). index.json, a cache that may lag some saves behind, parses and names only
 * scripts that have their folder; the next server's list_scripts has them all.
 */
function checkLibrary(home: string, saved: Set<string>): void {
  const dir = join(home, 'scripts');
  for (const name of saved) {
    const metadata = JSON.parse(readFileSync(join(dir, name, 'metadata.json'), 'utf8'));
    expect(metadata.name, `saved script ${name} has its metadata`).toBe(name);
    expect(readFileSync(join(dir, name, `script.${EXT[metadata.language]}`), 'utf8').length).toBeGreaterThan(
      0,
    );
  }
  let index: { scripts: Array<{ name: string }> };
  try {
    index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  for (const script of index.scripts) {
    const metadata = JSON.parse(readFileSync(join(dir, script.name, 'metadata.json'), 'utf8'));
    expect(metadata.name).toBe(script.name);
  }
}

/** Every line of every JSONL file parses, but for a torn last line. */
function checkLogs(home: string): void {
  const dir = join(home, 'logs');
  for (const file of files(dir).filter((name) => name.endsWith('.jsonl'))) {
    const lines = readFileSync(join(dir, file), 'utf8').split('\n');
    const last = lines.pop();
    expect(last === '' || last === undefined || parses(last), `${file}: the last line is whole or torn`).toBe(
      true,
    );
    for (const line of lines) expect(parses(line), `${file}: ${line.slice(0, 80)}`).toBe(true);
  }
}

function parses(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

/** Execution ids of every whole execution line in the JSONL (one-shot runs and session sends). */
function loggedExecutions(home: string): Set<string> {
  const dir = join(home, 'logs');
  const ids = new Set<string>();
  for (const file of files(dir).filter((name) => /^(executions|session)-.*\.jsonl$/.test(name))) {
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      if (!parses(line) || line === '') continue;
      const entry = JSON.parse(line) as { type?: string; execution_id?: string };
      if (entry.type === 'execution' && entry.execution_id) ids.add(entry.execution_id);
    }
  }
  return ids;
}

/**
 * Where a server makes the parent of its run cgroups (codexec-runs-<pid>, cgroup-parent.ts): beside
 * it, found as the server finds them.
 */
function runCgroupParents(pid: number): string[] {
  const self = readFileSync(`/proc/${pid}/cgroup`, 'utf8').replace(/\/codexec-server$/gm, '');
  const layout = findCgroups(readFileSync('/proc/self/mountinfo', 'utf8'), self);
  return layout ? [...new Set([layout.memory, layout.pids])] : [];
}

/** The run cgroups of these (dead) servers still there, or the parents that held them. */
function cgroupsOf(servers: readonly number[], parents: readonly string[]): string[] {
  return parents.flatMap((parent) =>
    readdirSync(parent).filter((name) =>
      servers.includes(Number(/^codexec-runs?-(\d+)(-|$)/.exec(name)?.[1])),
    ),
  );
}

function files(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return []; // nothing written there yet
  }
}

function workspaces(home: string): string[] {
  try {
    return readdirSync(join(home, 'sandbox')).filter((name) => /^(exec|sess)_/.test(name));
  } catch {
    return [];
  }
}
