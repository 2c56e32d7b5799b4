import type { SavedScript, SaveScriptInput, ScriptMetadata, StoredScript } from './types.js';

/**
 * One principal's library, wherever it is kept (on disk by default; in PostgreSQL with
 * CODEXEC_STORE=postgres://…). Every call acts on the principal the store was made for.
 */
export interface ScriptStore {
  /** Save `input` as the next version of its name (1 for a new one), pruning past maxVersions. */
  save(input: SaveScriptInput): Promise<SavedScript>;
  /** The current script, or an earlier `version` of its code; NOT_FOUND when there is none. */
  get(name: string, version?: number): Promise<StoredScript>;
  /** How many earlier versions are kept for `name`. */
  versionCount(name: string): Promise<number>;
  /** Every script, sorted by name. */
  list(): Promise<ScriptMetadata[]>;
  /** Count a run of `name`, successful or not; NOT_FOUND when there is no such script. */
  recordRun(name: string, success: boolean): Promise<ScriptMetadata>;
}
