import { createRequire } from 'node:module';
import type { Pool, PoolClient, QueryResultRow } from 'pg';
import { log } from '../util/index.js';

/** What a query runs on: the pool, or one transaction's connection. */
export interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(text: string, params?: readonly unknown[]): Promise<R[]>;
}

/** Connections per replica: runs are few and short next to the database's own limits. */
const POOL_SIZE = 10;
/** How long a connection attempt waits before the call fails (the database down or unreachable). */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * The shared PostgreSQL store (CODEXEC_STORE=postgres://…): one connection pool per process,
 * opened on the first query (`pg` is loaded then, so a SQLite server never loads it), and
 * versioned migrations per component (logs, tasks, scripts, …), each applied once under an
 * advisory lock so that replicas starting together do not race.
 */
export class Postgres implements Queryable {
  private pool: Pool | undefined;
  private readonly migrated = new Map<string, Promise<void>>();
  private closed = false;

  constructor(readonly url: string) {}

  async query<R extends QueryResultRow = QueryResultRow>(
    text: string,
    params: readonly unknown[] = [],
  ): Promise<R[]> {
    return (await this.open().query<R>(text, params as unknown[])).rows;
  }

  /** Run `work` in one transaction: committed when it resolves, rolled back when it throws. */
  async transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await this.open().connect();
    try {
      await client.query('BEGIN');
      const result = await work(onClient(client));
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  /**
   * Bring `component`'s tables to the last of `migrations` (each a SQL script; its index + 1 is
   * its version). Applied once per process; versions already applied (by any replica) are skipped.
   * Never edit a migration that shipped: add the next one.
   */
  migrate(component: string, migrations: readonly string[]): Promise<void> {
    let done = this.migrated.get(component);
    if (!done) {
      done = this.applyMigrations(component, migrations);
      done.catch(() => this.migrated.delete(component)); // the next use tries again
      this.migrated.set(component, done);
    }
    return done;
  }

  async close(): Promise<void> {
    this.closed = true;
    const pool = this.pool;
    this.pool = undefined;
    await pool?.end().catch(() => {});
  }

  private async applyMigrations(component: string, migrations: readonly string[]): Promise<void> {
    await this.transaction(async (tx) => {
      // One lock for every component's migrations: DDL by two replicas at once would deadlock or fail.
      await tx.query("SELECT pg_advisory_xact_lock(hashtext('codexec migrations'))");
      await tx.query(
        'CREATE TABLE IF NOT EXISTS codexec_migrations (component TEXT PRIMARY KEY, version INTEGER NOT NULL)',
      );
      const [row] = await tx.query<{ version: number }>(
        'SELECT version FROM codexec_migrations WHERE component = $1',
        [component],
      );
      const current = row?.version ?? 0;
      if (current > migrations.length)
        throw new Error(
          `the database's ${component} tables are at version ${current}, newer than this codexec knows (${migrations.length}): upgrade codexec`,
        );
      for (let version = current + 1; version <= migrations.length; version++)
        await tx.query(migrations[version - 1] as string);
      if (current < migrations.length)
        await tx.query(
          `INSERT INTO codexec_migrations (component, version) VALUES ($1, $2)
           ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version`,
          [component, migrations.length],
        );
    });
  }

  private open(): Pool {
    if (this.closed) throw new Error('the postgres store is closed');
    if (!this.pool) {
      const pg = createRequire(import.meta.url)('pg') as typeof import('pg');
      this.pool = new pg.Pool({
        connectionString: this.url,
        max: POOL_SIZE,
        connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
        application_name: 'codexec',
      });
      // An idle connection the server dropped: the pool replaces it; without a listener it would crash us.
      this.pool.on('error', (error) => log('warn', `postgres: ${error.message}`));
    }
    return this.pool;
  }
}

function onClient(client: PoolClient): Queryable {
  return {
    async query<R extends QueryResultRow>(text: string, params: readonly unknown[] = []) {
      return (await client.query<R>(text, params as unknown[])).rows;
    },
  };
}

/** The URL with its password hidden, for logs and doctor. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://…';
  }
}
