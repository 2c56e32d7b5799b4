// The execution log's tables in PostgreSQL (CODEXEC_STORE=postgres://…). Never edit a migration
// that shipped: append the next one.

export const LOG_COMPONENT = 'logs';

export const LOG_MIGRATIONS: readonly string[] = [
  `
  -- One row per execution, the columns of index.db's executions table. seq is the insertion
  -- order: newest first is (executed_ms DESC, seq DESC), as index.db's id (ms * 1024 + arrival).
  CREATE TABLE codexec_log_executions (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    execution_id text NOT NULL UNIQUE,
    session_id text,
    language text,
    status text NOT NULL,
    exit_code integer,
    duration_ms bigint NOT NULL,
    executed_at text NOT NULL,
    executed_ms bigint NOT NULL,
    -- UTF-8 bytes: previews are the caller's text, which may hold NUL (PostgreSQL text cannot).
    code_preview bytea NOT NULL,
    error_preview bytea,
    principal text NOT NULL,
    -- The replica that wrote it (replicaId()), for the operator.
    replica text NOT NULL,
    -- The JSONL line as written: get_execution_log parses it as the SQLite path parses the file's.
    line text NOT NULL,
    -- Distinct words of code, stdout and stderr (FTS5's tokenizer: pg-tokens.ts), and facet
    -- lexemes for principal, language and status (~o…, ~l…, ~s…) ...
    words tsvector NOT NULL,
    -- ... and all of them in order, per column, to check phrases ("read_csv" is read, then csv*).
    tokens text NOT NULL,
    -- Too many distinct words for one tsvector: words is '~' (and the facets), every term is
    -- checked on tokens.
    spilled boolean NOT NULL
  );
  CREATE INDEX codexec_log_executions_words ON codexec_log_executions USING gin (words);
  CREATE INDEX codexec_log_executions_time ON codexec_log_executions (executed_ms, seq);
  CREATE INDEX codexec_log_executions_principal ON codexec_log_executions (principal, executed_ms, seq);
  CREATE INDEX codexec_log_executions_status ON codexec_log_executions (principal, status, executed_ms, seq);
  CREATE INDEX codexec_log_executions_language
    ON codexec_log_executions (principal, language, executed_ms, seq);
  CREATE INDEX codexec_log_executions_session ON codexec_log_executions (session_id);
  -- Entries per (principal, language, status), kept in the statements that add and delete rows:
  -- searches by language and/or status alone (the dashboard's list) count without a scan.
  CREATE TABLE codexec_log_counts (
    principal text NOT NULL, language text NOT NULL, status text NOT NULL, n bigint NOT NULL,
    PRIMARY KEY (principal, language, status)
  );
  -- A session's language, from its session_start line (its execution lines may leave it out).
  CREATE TABLE codexec_log_sessions (session_id text PRIMARY KEY, language text NOT NULL);
  `,
  `
  -- The saved script a run executed (run_script): a filter of its own, and its words among the
  -- entry's (entries logged before this migration have the column, from their line, not the words).
  ALTER TABLE codexec_log_executions ADD COLUMN script_name text;
  UPDATE codexec_log_executions SET script_name = line::jsonb ->> 'script_name'
    WHERE line LIKE '%"script_name":"%';
  CREATE INDEX codexec_log_executions_script ON codexec_log_executions (script_name, executed_ms, seq)
    WHERE script_name IS NOT NULL;
  `,
];
