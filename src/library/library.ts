import type { Postgres } from '../store/index.js';
import { PostgresScriptStore } from './postgres-store.js';
import { libraryDir } from './principals.js';
import { DiskScriptStore } from './store.js';
import type { LibraryLimits, ScriptStore } from './types.js';

/**
 * Every principal's script library: a store per principal, made on first use and kept
 * (principals are the token file's, a fixed set). On disk under one scripts dir by default; in
 * PostgreSQL, shared by every replica, when given the store (CODEXEC_STORE=postgres://…).
 * A principal reaches only its own: there is no call that names another's.
 */
export class ScriptLibrary {
  private readonly stores = new Map<string, ScriptStore>();

  constructor(
    readonly scriptsDir: string,
    private readonly limits: LibraryLimits,
    private readonly store?: Postgres,
  ) {}

  /** The library of `principal` (LOCAL_PRINCIPAL on disk: the scripts dir itself, as before principals). */
  of(principal: string): ScriptStore {
    let library = this.stores.get(principal);
    if (!library) {
      library = this.store
        ? new PostgresScriptStore(this.store, principal, this.limits)
        : new DiskScriptStore(libraryDir(this.scriptsDir, principal), this.limits);
      this.stores.set(principal, library);
    }
    return library;
  }
}
