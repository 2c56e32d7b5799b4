import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { log } from '../util/index.js';
import { writeFileAtomic } from './atomic.js';
import { isScriptName } from './names.js';
import { type ScriptIndex, type ScriptMetadata, scriptIndexSchema, scriptMetadataSchema } from './types.js';

/**
 * index.json is rewritten once this many changes, relative to the library's size, are pending
 * (one change in a library of 16 or fewer): each save's share of the rewrite stays constant.
 */
const REWRITE_SHARE = 16;

interface Entry {
  readonly metadata: ScriptMetadata;
  /** Identity of the metadata.json it was read from: inode, mtime (ns) and size. */
  readonly stamp: string;
}

/**
 * The library's list of scripts, kept in memory and in `index.json` (the seed's format, plus each
 * entry's `stamps`). Each folder's metadata.json is the truth: a listing stats every one and reads
 * again only those whose file changed since it was read (another process saved, a save was cut
 * short), so a stale, corrupt or missing index.json costs a re-read, never a wrong answer. A save
 * costs O(1): it updates one entry, and index.json is rewritten after a number of changes that
 * grows with the library (and by every listing that found changes), not after each one.
 * Not safe for concurrent calls: its store serializes them.
 */
export class Catalog {
  private entries: Map<string, Entry> | undefined;
  /** Changes not yet in index.json. */
  private pending = 0;
  /** Folders whose metadata.json could not be read, by stamp: each is reported once. */
  private readonly unreadable = new Map<string, string>();

  constructor(private readonly dir: string) {}

  /** Every script, checked against the folders. */
  async list(): Promise<ScriptMetadata[]> {
    const first = this.entries === undefined;
    const entries = await this.loaded();
    if (!first) await this.refresh(entries);
    if (this.pending > 0) await this.write(entries);
    return sortedByName(entries).map((entry) => entry.metadata);
  }

  /** Record what a save or a run just wrote to `name`'s metadata.json. */
  async changed(name: string, metadata: ScriptMetadata): Promise<void> {
    const entries = await this.loaded();
    entries.set(name, { metadata, stamp: (await stampOf(this.dir, name)) ?? '' });
    this.pending += 1;
    if (this.pending >= Math.ceil(entries.size / REWRITE_SHARE)) await this.write(entries);
  }

  /** The first use in this process: index.json as found, checked against the folders once. */
  private async loaded(): Promise<Map<string, Entry>> {
    if (this.entries) return this.entries;
    const entries = new Map<string, Entry>();
    const path = join(this.dir, 'index.json');
    const text = await readFile(path, 'utf8').catch(() => undefined);
    if (text !== undefined) {
      const parsed = scriptIndexSchema().safeParse(safeJson(text));
      if (parsed.success) {
        const stamps = parsed.data.stamps ?? {};
        for (const metadata of parsed.data.scripts) {
          entries.set(metadata.name, { metadata, stamp: stamps[metadata.name] ?? '' });
        }
      } else {
        log('warn', `script index corrupt; rebuilding ${path} from the script folders`);
        this.pending += 1;
      }
    }
    await this.refresh(entries);
    this.entries = entries;
    return entries;
  }

  /** Bring `entries` in line with the folders: stat every metadata.json, read the changed ones. */
  private async refresh(entries: Map<string, Entry>): Promise<void> {
    const names = await scriptFolders(this.dir);
    const stamps = await Promise.all(names.map((name) => stampOf(this.dir, name)));
    const present = new Set<string>();
    for (const [i, name] of names.entries()) {
      const stamp = stamps[i];
      if (stamp === undefined) continue; // a folder without metadata.json: no script (yet)
      present.add(name);
      if (entries.get(name)?.stamp === stamp) continue;
      const metadata = await this.read(name, stamp);
      if (metadata) entries.set(name, { metadata, stamp });
      else entries.delete(name);
      this.pending += 1;
    }
    for (const name of entries.keys()) {
      if (present.has(name)) continue;
      entries.delete(name);
      this.pending += 1;
    }
  }

  private async read(name: string, stamp: string): Promise<ScriptMetadata | undefined> {
    const text = await readFile(join(this.dir, name, 'metadata.json'), 'utf8').catch(() => '');
    const parsed = scriptMetadataSchema().safeParse(safeJson(text));
    if (parsed.success) {
      this.unreadable.delete(name);
      return { ...parsed.data, name }; // the folder's name is the one get_script and run_script take
    }
    if (this.unreadable.get(name) !== stamp) {
      log('warn', `skipping script folder ${name}: its metadata.json is not valid`);
      this.unreadable.set(name, stamp);
    }
    return undefined;
  }

  /** index.json is a cache: failing to replace it (a read-only disk) fails no call; it is tried again. */
  private async write(entries: Map<string, Entry>): Promise<void> {
    await this.replaceIndex(entries).catch((error: Error) => {
      log('warn', `could not update ${join(this.dir, 'index.json')}: ${error.message}`);
    });
  }

  private async replaceIndex(entries: Map<string, Entry>): Promise<void> {
    const sorted = sortedByName(entries);
    const index: ScriptIndex = {
      version: 1,
      scripts: sorted.map((entry) => entry.metadata),
      stamps: Object.fromEntries(sorted.map((entry) => [entry.metadata.name, entry.stamp])),
    };
    await writeFileAtomic(join(this.dir, 'index.json'), `${JSON.stringify(index, null, 2)}\n`);
    this.pending = 0;
  }
}

function sortedByName(entries: Map<string, Entry>): Entry[] {
  return [...entries.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

/** The folders that may hold a script (hidden ones, like `.principals`, never do). */
async function scriptFolders(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isDirectory() && isScriptName(entry.name))
    .map((entry) => entry.name);
}

/** inode:mtime-ns:size of `name`'s metadata.json; undefined when it does not exist. */
async function stampOf(dir: string, name: string): Promise<string | undefined> {
  try {
    const s = await stat(join(dir, name, 'metadata.json'), { bigint: true });
    return `${s.ino}:${s.mtimeNs}:${s.size}`;
  } catch {
    return undefined;
  }
}

export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
