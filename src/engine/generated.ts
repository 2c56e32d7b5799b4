// Files tools and builds generate on their own (MassGen's auto-generated list): left out of every
// artifact list, so a run that imports a module or runs pytest reports what the code made, not
// the caches beside it. Excluded directories are not walked at all (a .venv holds thousands).
// Ours too: a landlock run's own TMPDIR in its workspace (TMP_PREFIX, src/sandbox), and the note a
// docker-mode container's wrapper leaves of the limit that stopped it (LIMIT_NOTE).
import { LIMIT_NOTE, TMP_PREFIX } from '../sandbox/index.js';

/** Directory or file names left out wherever they appear in the tree. */
const NAMES = new Set([
  '__pycache__',
  '.pytest_cache',
  '.mypy_cache',
  '.ruff_cache',
  '.tox',
  '.nox',
  '.coverage',
  'node_modules',
  '.next',
  '.nuxt',
  '.DS_Store',
  'Thumbs.db',
  // Ours: a virtual environment is tooling, not output (python -m venv writes ~1,000 files).
  '.venv',
  // Ours: where a Python run's figures wait to be returned as images (images.ts).
  '.codexec-figures',
]);

/** Name endings left out: bytecode, packaging metadata, editor swap and backup files. */
const SUFFIXES = ['.pyc', '.pyo', '.egg-info', '.swp', '.swo', '~'];

/**
 * The seed's list also names `dist`, `build` and `*.log`; they stay in artifact lists here, since
 * they are often the very output a run was asked for (a built package, a report, a log to read).
 */
export function isGenerated(name: string): boolean {
  return (
    NAMES.has(name) ||
    name.startsWith(TMP_PREFIX) ||
    name.startsWith(LIMIT_NOTE) ||
    SUFFIXES.some((suffix) => name.endsWith(suffix))
  );
}
