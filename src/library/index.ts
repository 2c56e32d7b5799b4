// The script library: named, versioned scripts, one library per principal, on disk in the seed's
// layout or in PostgreSQL (CODEXEC_STORE), listed, searched by relevance, with run tracking.

export { ScriptLibrary } from './library.js';
export { assertScriptName } from './names.js';
export { isNoScript, noScript } from './not-found.js';
export { libraryDir, PRINCIPALS_FOLDER } from './principals.js';
export { type Relevance, type SearchHit, searchScripts } from './search.js';
export { DiskScriptStore } from './sqlite.js';
export type { ScriptStore } from './store.js';
export type {
  LibraryLimits,
  SavedScript,
  SaveScriptInput,
  ScriptMetadata,
  StoredScript,
} from './types.js';
