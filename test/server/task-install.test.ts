// install_package as an MCP task (2026-07-28 extension, over stdio), from a local npm registry:
// polled with tasks/get to the result a plain call returns; tasks/cancel during a slow install (a
// package whose install script sleeps) kills the installer's whole process tree.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appeared, processesUnder, processesWith, sleepMarker } from '../helpers/procs.js';
import { type RawServer, startRawServer } from '../helpers/raw.js';
import { tempDir } from '../helpers/server.js';
import { overStdio, pollUntilDone, type Send } from '../helpers/tasks.js';
import { buildNpmTarball, type LocalRegistry, startRegistry } from '../packages/fixtures.js';

/** `npm pack` of a package whose install script runs `sleep <marker>`. */
function sleepingTarball(dir: string, name: string, marker: string): Buffer {
  const root = join(dir, name);
  mkdirSync(root, { recursive: true });
  writeFileSync(
    join(root, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', main: 'index.js', scripts: { install: `sleep ${marker}` } }),
  );
  writeFileSync(join(root, 'index.js'), 'module.exports = "slept";\n');
  const file = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], {
    cwd: root,
    encoding: 'utf8',
  }).trim();
  return readFileSync(join(dir, file));
}

/** What `list` still finds after up to `ms` (processes being torn down take a moment). */
async function gone(list: () => number[], ms = 15_000): Promise<number[]> {
  const until = Date.now() + ms;
  let left = list();
  while (left.length > 0 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    left = list();
  }
  return left;
}

describe('install_package as a task', () => {
  const dir = tempDir('codexec-task-install-');
  const marker = sleepMarker();
  let registry: LocalRegistry;
  let server: RawServer;
  let send: Send;

  beforeAll(async () => {
    registry = await startRegistry({
      npm: {
        'codexec-quick': {
          version: '1.2.3',
          tarball: buildNpmTarball(dir, 'codexec-quick', '1.2.3', 'quick'),
        },
        'codexec-sleepy': { version: '1.0.0', tarball: sleepingTarball(dir, 'codexec-sleepy', marker) },
      },
    });
    server = startRawServer({ npm_config_registry: `${registry.url}/` });
    await server.discover();
    send = overStdio(server);
  });
  afterAll(async () => {
    await server?.close();
    await registry?.close();
    for (const pid of processesWith(marker)) process.kill(pid, 'SIGKILL'); // a backstop
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers at once with a task, polled to the result a plain call returns', async () => {
    const created = await send('tools/call', {
      name: 'install_package',
      arguments: { language: 'node', package: 'codexec-quick' },
    });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    const done = await pollUntilDone(send, created.result?.taskId as string, 120_000);
    expect(done.result?.status).toBe('completed');
    const result = done.result?.result as { structuredContent: Record<string, unknown> };
    expect(result.structuredContent, String(result.structuredContent.install_output)).toMatchObject({
      success: true,
      package: 'codexec-quick',
      version: '1.2.3',
      language: 'node',
    });
    const used = await send(
      'tools/call',
      {
        name: 'execute_code',
        arguments: { language: 'node', code: 'console.log(require("codexec-quick"))' },
      },
      false,
    );
    expect(used.result?.structuredContent).toMatchObject({ stdout: 'quick\n' });
  }, 150_000);

  it('tasks/cancel during the install kills its whole process tree; the task reads cancelled', async () => {
    const created = await send('tools/call', {
      name: 'install_package',
      arguments: { language: 'node', package: 'codexec-sleepy' },
    });
    const taskId = created.result?.taskId as string;
    expect((await appeared(marker, 120_000)).length).toBeGreaterThan(0);
    // The installer's processes: npm rebuild's sandbox in the install's stage, the script in it.
    const stage = join(server.home, 'tmp');
    expect(processesUnder(stage).length).toBeGreaterThan(0);
    expect((await send('tasks/cancel', { taskId })).error).toBeUndefined();
    expect((await send('tasks/get', { taskId })).result?.status).toBe('cancelled');
    expect(await gone(() => processesWith(marker))).toEqual([]);
    expect(await gone(() => processesUnder(stage))).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 500)); // the time a wrong change of status is given
    expect((await send('tasks/get', { taskId })).result?.status).toBe('cancelled');
  }, 150_000);
});
