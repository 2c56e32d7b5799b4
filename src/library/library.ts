import { libraryDir } from './principals.js';
import { ScriptStore } from './store.js';
import type { LibraryLimits } from './types.js';

/**
 * Every principal's script library under one scripts dir: a store per principal, made on first
 * use and kept (principals are the token file's, a fixed set). A principal reaches only its own:
 * there is no call that names another's.
 */
export class ScriptLibrary {
  private readonly stores = new Map<string, ScriptStore>();

  constructor(
    readonly scriptsDir: string,
    private readonly limits: LibraryLimits,
  ) {}

  /** The library of `principal` (LOCAL_PRINCIPAL: the scripts dir itself, as before principals). */
  of(principal: string): ScriptStore {
    let store = this.stores.get(principal);
    if (!store) {
      store = new ScriptStore(libraryDir(this.scriptsDir, principal), this.limits);
      this.stores.set(principal, store);
    }
    return store;
  }
}
