import type { ScriptStore } from './store.js';

/**
 * Every principal's script library: a store per principal, made on first use and kept
 * (principals are the token file's, a fixed set), by `open` (the record stores choose it: on disk
 * under one scripts dir, or in PostgreSQL, shared by every replica). A principal reaches only its
 * own: there is no call that names another's.
 */
export class ScriptLibrary {
  private readonly stores = new Map<string, ScriptStore>();

  constructor(private readonly open: (principal: string) => ScriptStore) {}

  /** The library of `principal`. */
  of(principal: string): ScriptStore {
    let library = this.stores.get(principal);
    if (!library) {
      library = this.open(principal);
      this.stores.set(principal, library);
    }
    return library;
  }
}
