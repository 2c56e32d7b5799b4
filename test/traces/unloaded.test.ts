// Zero cost when unset: without OTEL_EXPORTER_OTLP_ENDPOINT no OpenTelemetry module is loaded, and
// over stdio not even prom-client. Read from the ESM loader itself: a resolve hook (node --import)
// logs every module URL the server resolves.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startHttp } from '../helpers/http.js';
import { logEnv, logged } from '../helpers/module-log.js';
import { baseEnv, CLI, callTool, startServer, tempDir } from '../helpers/server.js';

const isSqlite = (url: string) => url.includes('/node_modules/better-sqlite3/');

describe('OpenTelemetry, prom-client and pg are loaded only when used', () => {
  it('stdio without OTEL_EXPORTER_OTLP_ENDPOINT: neither, through a whole run', async () => {
    const dir = tempDir();
    const { path, env } = logEnv(dir);
    const server = await startServer({ env });
    try {
      const run = await callTool(server.client, 'execute_code', { language: 'python', code: 'print(1)' });
      expect(run.value.stdout).toBe('1\n');
      // A search opens the execution log's index: better-sqlite3, loaded by require().
      const found = await callTool<{ total_count: number }>(server.client, 'search_execution_logs', {});
      expect(found.value.total_count).toBe(1);
    } finally {
      await server.close();
    }
    const modules = logged(path);
    expect(modules.some((url) => url.endsWith('/dist/cli.js'))).toBe(true); // the hook saw the server
    expect(modules.some((url) => url.endsWith('/dist/server/guard.js'))).toBe(true);
    expect(
      modules.filter((url) =>
        /@opentelemetry|prom-client|traces\/otel\.js|metrics\/prometheus\.js|\/node_modules\/pg\//.test(url),
      ),
    ).toEqual([]);
    // The log sees require() too: the search's index loaded better-sqlite3 that way.
    expect(modules.some(isSqlite)).toBe(true);
    rmSync(dir, { recursive: true, force: true });
    rmSync(server.home, { recursive: true, force: true });
  }, 60_000);

  it('serve --http without it: prom-client, no OpenTelemetry', async () => {
    const dir = tempDir();
    const { path, env } = logEnv(dir);
    const server = await startHttp({ env: { ...env, CODEXEC_METRICS_PUBLIC: 'true' } });
    try {
      expect((await fetch(new URL('/metrics', server.url))).status).toBe(200);
    } finally {
      await server.stop();
    }
    const modules = logged(path);
    expect(modules.some((url) => url.includes('/prom-client/'))).toBe(true);
    // prom-client itself requires @opentelemetry/api (for exemplars): the SDK and exporter stay out.
    expect(modules.filter((url) => /@opentelemetry\/(?!api\/)|traces\/otel\.js/.test(url))).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
    rmSync(server.home, { recursive: true, force: true });
  }, 60_000);

  it('stdio with it set: the OpenTelemetry SDK and exporter are loaded', async () => {
    const dir = tempDir();
    const { path, env } = logEnv(dir);
    // Nothing listens there: no span is made (no call), so nothing is sent.
    const server = await startServer({ env: { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' } });
    await server.close();
    const modules = logged(path);
    expect(modules.some((url) => url.includes('/@opentelemetry/sdk-trace-node/'))).toBe(true);
    expect(modules.some((url) => url.includes('/@opentelemetry/exporter-trace-otlp-http/'))).toBe(true);
    rmSync(dir, { recursive: true, force: true });
    rmSync(server.home, { recursive: true, force: true });
  }, 60_000);

  it('pg only with a postgres CODEXEC_STORE, at its first query', () => {
    const dir = tempDir();
    const { path, env } = logEnv(dir);
    const key = join(dir, 'approval.key');
    writeFileSync(key, randomBytes(32), { mode: 0o600 });
    // Nothing listens on port 9: doctor's query fails, after loading pg to try.
    spawnSync(process.execPath, [CLI, 'doctor'], {
      env: {
        ...baseEnv(dir),
        ...env,
        CODEXEC_STORE: 'postgres://codexec@127.0.0.1:9/none',
        CODEXEC_APPROVAL_KEY_FILE: key,
      },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(logged(path).some((url) => url.includes('/node_modules/pg/'))).toBe(true);
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);
});
