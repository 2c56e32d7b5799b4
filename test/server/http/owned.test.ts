// Whose a session is, the session manager keeps and checks on every call that names one: the
// principal bound to the request (util/principal), not a wrapper around a list of its methods.
// The walk below finds the methods by their first parameter, so a method added later is walked
// too; another principal's id must be answered exactly as an unknown one, before and after the
// session ended.
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { closeRecords, createServices, stopWork } from '../../../src/server/services.js';
import { SessionManager } from '../../../src/sessions/index.js';
import { asPrincipal } from '../../../src/util/index.js';
import { eventually } from '../../helpers/eventually.js';
import { baseEnv, tempDir } from '../../helpers/server.js';

const home = tempDir();
const services = await createServices(
  loadConfig({ ...baseEnv(home), CODEXEC_SESSION_IDLE_TIMEOUT_MS: '1000', CODEXEC_POOL_SIZE: '0' }),
);
afterAll(async () => {
  await stopWork(services);
  await closeRecords(services);
  rmSync(home, { recursive: true, force: true });
});

/**
 * SessionManager's methods whose first parameter is a session id (`get` itself, the one lookup,
 * among them). Those that take any session's id call it something else (`anyId`, `id`).
 */
function sessionMethods(): string[] {
  const proto = SessionManager.prototype as unknown as Record<string, unknown>;
  return Object.getOwnPropertyNames(proto).filter((name) => {
    const method = proto[name];
    return typeof method === 'function' && /^[^(]*\(\s*sessionId\b/.test(method.toString());
  });
}

/** What `method` answers bob for `sessionId` (its code and message), args after the id filled in. */
async function answer(method: string, sessionId: string): Promise<{ code?: string; message: string }> {
  const manager = services.sessions as unknown as Record<string, (...args: unknown[]) => unknown>;
  const rest: Record<string, unknown[]> = {
    send: [{ code: 'echo x' }],
    writeStdin: ['x', false],
    startProcess: ['sleep 1'],
    packageEnv: ['python'],
    recordPackageInstall: ['x'],
  };
  try {
    await asPrincipal('bob', () =>
      manager[method]?.call(services.sessions, sessionId, ...(rest[method] ?? [])),
    );
    return { message: 'answered' };
  } catch (error) {
    return error as { code?: string; message: string };
  }
}

describe("another principal's session", () => {
  it('is unknown to every method that names a session, live and ended', async () => {
    const methods = sessionMethods();
    expect(methods).toEqual(
      expect.arrayContaining(['send', 'close', 'describe', 'writeStdin', 'startProcess']),
    );
    const started = await asPrincipal('alice', () => services.sessions.start({ language: 'bash' }));
    const id = started.session_id;
    const unknown = await answer('describe', 'sess_000000000000');
    expect(unknown.code).toBe('SESSION_NOT_FOUND');
    const sameAsUnknown = (message: string) => message.replace(id, 'sess_000000000000');
    for (const method of methods) {
      const got = await answer(method, id);
      expect({ method, code: got.code }).toEqual({ method, code: 'SESSION_NOT_FOUND' });
      expect(sameAsUnknown(got.message)).toBe(unknown.message);
    }
    // alice's own calls still work, and list shows each principal its own only.
    expect(await asPrincipal('alice', () => services.sessions.describe(id))).toMatchObject({
      language: 'bash',
    });
    expect((await asPrincipal('bob', () => services.sessions.list())).sessions).toEqual([]);
    expect((await asPrincipal('alice', () => services.sessions.list())).sessions).toHaveLength(1);
    await asPrincipal('alice', () => services.sessions.close(id));
    for (const method of methods) {
      const got = await answer(method, id);
      expect({ method, code: got.code }).toEqual({ method, code: 'SESSION_NOT_FOUND' });
      expect(sameAsUnknown(got.message)).toBe(unknown.message);
    }
    // Its owner is told it ended.
    await expect(asPrincipal('alice', async () => services.sessions.describe(id))).rejects.toThrow(
      /has ended/,
    );
  }, 30_000);

  it('the idle timeout ends sessions no request is watching', async () => {
    const started = await asPrincipal('alice', () => services.sessions.start({ language: 'bash' }));
    expect(await eventually(() => !services.sessions.isLocal(started.session_id))).toBe(true);
    expect((await asPrincipal('alice', () => services.sessions.list())).sessions).toEqual([]);
  }, 30_000);
});
