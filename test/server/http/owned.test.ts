// The owner map of serve --http (Tenants, src/server/http/owned.ts) follows its sessions: an entry goes when
// its session ends, however it ends — closed, or killed by the idle timeout with no request to
// notice — so a long-running server's map holds only live sessions.
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { Tenants } from '../../../src/server/http/owned.js';
import { closeRecords, createServices, stopWork } from '../../../src/server/services.js';
import { baseEnv, tempDir } from '../../helpers/server.js';

const home = tempDir();
const services = createServices(
  loadConfig({ ...baseEnv(home), CODEXEC_SESSION_IDLE_TIMEOUT_MS: '1000', CODEXEC_POOL_SIZE: '0' }),
);
afterAll(async () => {
  await stopWork(services);
  await closeRecords(services);
  rmSync(home, { recursive: true, force: true });
});

describe('the session owner map', () => {
  it('drops a session when it is closed and when the idle timeout ends it', async () => {
    const tenants = new Tenants(services.sessions);
    const alice = tenants.servicesFor(services, 'alice');
    const closed = await alice.sessions.start({ language: 'bash' });
    await alice.sessions.start({ language: 'bash' }); // left to the idle timeout
    expect(tenants.ownedSessions).toBe(2);
    await alice.sessions.close(closed.session_id);
    expect(tenants.ownedSessions).toBe(1);
    const deadline = Date.now() + 15_000;
    while (tenants.ownedSessions > 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(tenants.ownedSessions).toBe(0);
    expect((await alice.sessions.list()).sessions).toEqual([]);
  }, 30_000);
});
