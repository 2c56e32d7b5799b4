// The script library: named, versioned scripts saved on disk in the seed's layout, listed,
// searched by relevance, and run through the engine with run tracking.

export { assertScriptName } from './names.js';
export { type Relevance, type SearchHit, searchScripts } from './search.js';
export { ScriptStore } from './store.js';
export type { SaveScriptInput, ScriptMetadata, StoredScript } from './types.js';
