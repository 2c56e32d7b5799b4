// What a result says about the files a run changed, bounded as everything a caller can make grow
// (code chooses how many files it makes, and their names): at most CODEXEC_MAX_ARTIFACTS names and CODEXEC_MAX_ARTIFACT_BYTES
// of them (created, then modified, then deleted), the rest counted in `artifacts_omitted`; names
// as the walk shows them (util/names: escaped) with secrets masked, as in the output. Only the
// listed names are ever masked, measured or copied: a run that made 10,000 files costs no more here
// than one that made 200.
import type { SecretsFilter } from '../policy/index.js';
import type { ArtifactDiff } from './artifacts.js';

export interface ArtifactBounds {
  readonly maxEntries: number;
  readonly maxBytes: number;
}

/** How many names of each kind a result left out; `walk_stopped` when the walk itself was cut. */
export interface ArtifactsOmitted {
  created: number;
  modified: number;
  deleted: number;
  walk_stopped?: true;
}

export interface ArtifactListing {
  /** Created, then modified (the result's `artifacts`). */
  readonly artifacts: string[];
  readonly deleted: string[];
  /** Present only when something was left out. */
  readonly omitted?: ArtifactsOmitted;
  /** The listed names by kind, for the execution log. */
  readonly logged: ArtifactDiff;
  /** Listed files whose names are shown as they are (no escape, no mask): where images are read. */
  readonly plain: string[];
}

export function listArtifacts(
  diff: ArtifactDiff,
  bounds: ArtifactBounds,
  secrets: SecretsFilter | undefined,
): ArtifactListing {
  if (diff.created.length + diff.modified.length + diff.deleted.length === 0 && !diff.walkStopped)
    return { artifacts: [], deleted: [], logged: diff, plain: [] };
  let entries = bounds.maxEntries;
  let bytes = bounds.maxBytes;
  const plain: string[] = [];
  let full = false;
  const take = (names: readonly string[], files: boolean): string[] => {
    const listed: string[] = [];
    for (const name of names) {
      if (full) break;
      const shown = secrets ? secrets.redact(name) : name;
      const size = Buffer.byteLength(shown, 'utf8');
      if (entries === 0 || size > bytes) {
        full = true; // in walk order: what comes after a name that does not fit is left out too
        break;
      }
      entries -= 1;
      bytes -= size;
      listed.push(shown);
      if (files && shown === name && !name.includes('\\')) plain.push(name);
    }
    return listed;
  };
  const created = take(diff.created, true);
  const modified = take(diff.modified, true);
  const deleted = take(diff.deleted, false);
  const logged = { created, modified, deleted };
  const artifacts = modified.length === 0 ? created : [...created, ...modified];
  if (!full && !diff.walkStopped) return { artifacts, deleted, logged, plain };
  const omitted: ArtifactsOmitted = {
    created: diff.created.length - created.length,
    modified: diff.modified.length - modified.length,
    deleted: diff.deleted.length - deleted.length,
    ...(diff.walkStopped && { walk_stopped: true }),
  };
  return { artifacts, deleted, omitted, logged, plain };
}
