import { CodexecError } from '../errors/index.js';
import type { Postgres } from '../store/index.js';
import { newId } from '../util/index.js';
import { safeJson } from './catalog.js';
import { assertCodeSize, assertScriptName, extension } from './names.js';
import { noScript, noVersion } from './not-found.js';
import type { ScriptStore } from './store.js';
import {
  type LibraryLimits,
  type SavedScript,
  type SaveScriptInput,
  type ScriptMetadata,
  type StoredScript,
  scriptMetadataSchema,
} from './types.js';

/**
 * The script library's tables (component `scripts`), applied by `Postgres.migrate`. A shipped
 * migration is never edited: a change is the next entry.
 *
 * `scripts`: one row per principal and name, the current version's metadata. What the caller
 * wrote (description, tags, packages, source execution) is kept as `json` text, which, unlike
 * `text` and `jsonb`, keeps any string the disk library keeps (a NUL included); the code is
 * `bytea` for the same reason. `script_versions`: the code of the current and each kept earlier
 * version; deleting a script deletes its versions.
 */
const SCRIPT_MIGRATIONS: readonly string[] = [
  `CREATE TABLE scripts (
     principal TEXT NOT NULL,
     name TEXT NOT NULL,
     script_id TEXT NOT NULL,
     language TEXT NOT NULL,
     metadata JSON NOT NULL,
     version INTEGER NOT NULL CHECK (version > 0),
     run_count INTEGER NOT NULL DEFAULT 0,
     last_run_success BOOLEAN,
     created_at TIMESTAMPTZ NOT NULL,
     updated_at TIMESTAMPTZ NOT NULL,
     last_run_at TIMESTAMPTZ,
     PRIMARY KEY (principal, name)
   );
   CREATE TABLE script_versions (
     principal TEXT NOT NULL,
     name TEXT NOT NULL,
     version INTEGER NOT NULL CHECK (version > 0),
     language TEXT NOT NULL,
     code BYTEA NOT NULL,
     saved_at TIMESTAMPTZ NOT NULL DEFAULT now(),
     PRIMARY KEY (principal, name, version),
     FOREIGN KEY (principal, name) REFERENCES scripts (principal, name) ON DELETE CASCADE
   );`,
];

/** One row of `scripts` as the queries below return it (timestamps already in ISO form). */
interface ScriptRow {
  script_id: string;
  name: string;
  language: string;
  metadata: string;
  version: number;
  run_count: number;
  last_run_success: boolean | null;
  created_at: string;
  updated_at: string;
  last_run_at: string | null;
}

/** Milliseconds, UTC, `Z`: what `isoTime()` writes into metadata.json (as toISOString does). */
const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const columns = (t: string) =>
  `${t}script_id, ${t}name, ${t}language, ${t}metadata::text AS metadata, ${t}version, ${t}run_count,
   ${t}last_run_success, ${iso(`${t}created_at`)} AS created_at, ${iso(`${t}updated_at`)} AS updated_at,
   ${iso(`${t}last_run_at`)} AS last_run_at`;

/**
 * The next version of a name, or its first: the upsert takes the row's lock, so saves of one name
 * from any number of replicas get distinct, consecutive numbers (the second waits for the first's
 * commit and counts from its row). A script keeps its id, creation time and run history.
 */
const UPSERT = `
  INSERT INTO scripts AS s (principal, name, script_id, language, metadata, version, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5::json, 1, now(), now())
  ON CONFLICT (principal, name) DO UPDATE
    SET language = EXCLUDED.language, metadata = EXCLUDED.metadata, version = s.version + 1,
        updated_at = now()
  RETURNING ${columns('')}`;

/** Earlier versions past the newest $4 of them. */
const PRUNE = `
  DELETE FROM script_versions
  WHERE principal = $1 AND name = $2 AND version < $3 AND version NOT IN (
    SELECT version FROM script_versions WHERE principal = $1 AND name = $2 AND version < $3
    ORDER BY version DESC LIMIT $4)
  RETURNING version`;

/** Failures a retry of the whole transaction resolves: serialization, deadlock, a racing insert. */
const RETRYABLE = new Set(['40001', '40P01', '23505']);
const ATTEMPTS = 5;

/**
 * One principal's script library in PostgreSQL (CODEXEC_STORE=postgres://…), shared by every
 * replica: the same versions, bounds, refusals and order as the disk library. Every statement
 * names the principal the store was made for, so no input reaches another's rows.
 */
export class PostgresScriptStore implements ScriptStore {
  constructor(
    private readonly pg: Postgres,
    private readonly principal: string,
    private readonly limits: LibraryLimits,
  ) {}

  async save(input: SaveScriptInput): Promise<SavedScript> {
    const name = assertScriptName(input.name);
    assertCodeSize(input.code, this.limits);
    const details = JSON.stringify({
      description: input.description,
      tags: [...new Set(input.tags)],
      packages: [...new Set(input.packages)],
      source_execution_id: input.sourceExecutionId ?? null,
    });
    const code = Buffer.from(input.code, 'utf8');
    const keepEarlier = Math.max(0, this.limits.maxVersions - 1);
    await this.ready();
    return retrying(() =>
      this.pg.transaction(async (tx) => {
        const [row] = await tx.query<ScriptRow>(UPSERT, [
          this.principal,
          name,
          newId('script'),
          input.language,
          details,
        ]);
        if (!row) throw new CodexecError('INTERNAL', `saving script ${name} returned no row`);
        const metadata = toMetadata(row);
        await tx.query(
          'INSERT INTO script_versions (principal, name, version, language, code) VALUES ($1, $2, $3, $4, $5)',
          [this.principal, name, metadata.version, metadata.language, code],
        );
        const gone = await tx.query<{ version: number }>(PRUNE, [
          this.principal,
          name,
          metadata.version,
          keepEarlier,
        ]);
        // With no earlier versions kept, the one replaced was never one (as on disk): not pruned.
        const pruned = gone.filter((v) => keepEarlier > 0 || v.version !== metadata.version - 1).length;
        return { metadata, code: input.code, path: pathOf(name, metadata.language), pruned };
      }),
    );
  }

  async get(name: string, version?: number): Promise<StoredScript> {
    assertScriptName(name);
    await this.ready();
    // A version no column can hold is simply not kept: NOT_FOUND, as on disk.
    const wanted = version === undefined || Number.isSafeInteger(version) ? version : 0;
    const [row] = await this.pg.query<ScriptRow & { code: Buffer | null; code_language: string | null }>(
      `SELECT ${columns('s.')}, v.code, v.language AS code_language
       FROM scripts s LEFT JOIN script_versions v
         ON v.principal = s.principal AND v.name = s.name AND v.version = COALESCE($3::bigint, s.version)
       WHERE s.principal = $1 AND s.name = $2`,
      [this.principal, name, wanted ?? null],
    );
    if (!row) throw noScript(name);
    const metadata = toMetadata(row);
    if (row.code === null || row.code_language === null) {
      if (version === undefined || version === metadata.version)
        throw new CodexecError('INTERNAL', `the code of script ${name} is missing`);
      throw noVersion(name, version, metadata.version, await this.earlier(name, metadata.version));
    }
    const language = scriptMetadataSchema().shape.language.parse(row.code_language);
    const current = version === undefined || version === metadata.version;
    return {
      metadata,
      code: row.code.toString('utf8'),
      path: current ? pathOf(name, language) : pathOf(name, language, version),
    };
  }

  async versionCount(name: string): Promise<number> {
    assertScriptName(name);
    await this.ready();
    const [row] = await this.pg.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM script_versions v
       JOIN scripts s ON s.principal = v.principal AND s.name = v.name
       WHERE v.principal = $1 AND v.name = $2 AND v.version < s.version`,
      [this.principal, name],
    );
    return row?.n ?? 0;
  }

  async list(): Promise<ScriptMetadata[]> {
    await this.ready();
    const rows = await this.pg.query<ScriptRow>(`SELECT ${columns('')} FROM scripts WHERE principal = $1`, [
      this.principal,
    ]);
    // Sorted here, as the disk library sorts: the database's collation may order names otherwise.
    return rows.map(toMetadata).sort((a, b) => a.name.localeCompare(b.name));
  }

  async recordRun(name: string, success: boolean): Promise<ScriptMetadata> {
    await this.ready();
    const [row] = await this.pg.query<ScriptRow>(
      `UPDATE scripts SET run_count = run_count + 1, last_run_at = now(), last_run_success = $3
       WHERE principal = $1 AND name = $2 RETURNING ${columns('')}`,
      [this.principal, name, success],
    );
    if (!row) throw noScript(name);
    return toMetadata(row);
  }

  private async earlier(name: string, current: number): Promise<number[]> {
    const rows = await this.pg.query<{ version: number }>(
      'SELECT version FROM script_versions WHERE principal = $1 AND name = $2 AND version < $3 ORDER BY version',
      [this.principal, name, current],
    );
    return rows.map((row) => row.version);
  }

  private ready(): Promise<void> {
    return this.pg.migrate('scripts', SCRIPT_MIGRATIONS);
  }
}

/** Where the code would sit in the disk layout, marked as kept in the database (no file exists). */
function pathOf(name: string, language: ScriptMetadata['language'], version?: number): string {
  const ext = extension(language);
  return version === undefined
    ? `postgres:${name}/script.${ext}`
    : `postgres:${name}/versions/${version}.${ext}`;
}

function toMetadata(row: ScriptRow): ScriptMetadata {
  const details = safeJson(row.metadata);
  const parsed = scriptMetadataSchema().safeParse({
    ...(typeof details === 'object' && details),
    script_id: row.script_id,
    name: row.name,
    language: row.language,
    created_at: row.created_at,
    updated_at: row.updated_at,
    last_run_at: row.last_run_at,
    run_count: row.run_count,
    last_run_success: row.last_run_success,
    version: row.version,
  });
  if (!parsed.success) throw new CodexecError('INTERNAL', `metadata of script ${row.name} is corrupt`);
  return parsed.data;
}

async function retrying<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (attempt >= ATTEMPTS || typeof code !== 'string' || !RETRYABLE.has(code)) throw error;
    }
  }
}
