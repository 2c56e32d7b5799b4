// The script library: named, versioned scripts saved on disk in the seed's layout, one library
// per principal, listed, searched by relevance, and run through the engine with run tracking.

export { ScriptLibrary } from './library.js';
export { assertScriptName } from './names.js';
export { libraryDir, PRINCIPALS_FOLDER } from './principals.js';
export { type Relevance, type SearchHit, searchScripts } from './search.js';
export { ScriptStore } from './store.js';
export type {
  LibraryLimits,
  SavedScript,
  SaveScriptInput,
  ScriptMetadata,
  StoredScript,
} from './types.js';
