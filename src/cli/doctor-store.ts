import type { Config } from '../config/index.js';
import { DEAD_AFTER_MS, loadApprovalKey, Postgres, redactUrl } from '../store/index.js';
import { line } from './doctor-sandbox.js';

/** CODEXEC_STORE: where shared state lives; for postgres, whether it answers and which replicas are live. */
export async function storeLines(config: Config): Promise<void> {
  console.log('\nstore');
  if (config.store.kind === 'sqlite') {
    console.log(`  sqlite: files under ${config.home} (CODEXEC_STORE); one server, no replicas`);
    return;
  }
  console.log(`  postgres:                ${redactUrl(config.store.url)} (CODEXEC_STORE)`);
  try {
    loadApprovalKey(config.approvalKeyFile);
    line(true, 'approval key', `${config.approvalKeyFile} (CODEXEC_APPROVAL_KEY_FILE)`);
  } catch (error) {
    line(false, 'approval key', (error as Error).message);
  }
  const pg = new Postgres(config.store.url);
  try {
    const [server] = await pg.query<{ version: string }>(
      "SELECT current_setting('server_version') AS version",
    );
    line(true, 'database', `PostgreSQL ${server?.version ?? '?'} answers`);
    const tables = await pg.query<{ name: string | null }>(
      "SELECT to_regclass('codexec_replicas')::text AS name",
    );
    const replicas = tables[0]?.name
      ? await pg.query<{ replica_id: string; url: string; age_ms: string }>(
          `SELECT replica_id, url, (extract(epoch from clock_timestamp()) * 1000)::bigint - heartbeat_ms AS age_ms
           FROM codexec_replicas ORDER BY replica_id`,
        )
      : [];
    console.log(`  replicas registered:     ${replicas.length}`);
    // As the replicas judge each other: silent past DEAD_AFTER_MS is dead (its sessions are lost).
    for (const replica of replicas) {
      const age = Number(replica.age_ms);
      const state = age > DEAD_AFTER_MS ? `DEAD (silent over ${DEAD_AFTER_MS / 1000} s)` : 'live';
      console.log(`    ${replica.replica_id} at ${replica.url}: ${state}, heard ${age} ms ago`);
    }
  } catch (error) {
    line(false, 'database', `${(error as Error).message} — codexec serve cannot start on this store`);
  } finally {
    await pg.close();
  }
}
