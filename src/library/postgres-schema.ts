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
export const SCRIPT_MIGRATIONS: readonly string[] = [
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
