// The disk library, the one used without a shared database (CODEXEC_STORE=sqlite, the default:
// files are named after that setting's kinds, as every kind of record's are).
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CodexecError } from '../errors/index.js';
import { isoTime, newId } from '../util/index.js';
import { writeFileAtomic } from './atomic.js';
import { Catalog, safeJson } from './catalog.js';
import { assertCodeSize, assertScriptName, extension } from './names.js';
import { noScript, noVersion } from './not-found.js';
import type { ScriptStore } from './store.js';
import {
  type LibraryLimits,
  type SavedScript,
  type SaveScriptInput,
  type ScriptMetadata,
  type StoredScript,
  scriptMetadataSchema,
} from './types.js';
import { keepVersion, listVersions, pruneVersions } from './versions.js';

/**
 * One principal's script library on disk, in the seed's layout: `<dir>/index.json` plus one
 * folder per script with `script.<ext>` and `metadata.json`; earlier versions in
 * `versions/<n>.<ext>`, at most `maxVersions - 1` of them. Each folder's metadata.json is the
 * truth (index.json: see Catalog). A save touches only its own folder, whatever the library's
 * size. Mutations are serialized and every write is atomic.
 */
export class DiskScriptStore implements ScriptStore {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly catalog: Catalog;

  constructor(
    readonly dir: string,
    private readonly limits: LibraryLimits,
  ) {
    this.catalog = new Catalog(dir);
  }

  async save(input: SaveScriptInput): Promise<SavedScript> {
    const name = assertScriptName(input.name);
    assertCodeSize(input.code, this.limits);
    return this.exclusive(async () => {
      const folder = join(this.dir, name);
      const versions = join(folder, 'versions');
      const previous = await this.readMetadata(name).catch(() => undefined);
      // A new script starts at version 1: files left by one whose metadata is gone are not its own.
      if (!previous) await rm(versions, { recursive: true, force: true });
      await mkdir(versions, { recursive: true, mode: 0o700 }); // the server's alone: the home is lent search
      const now = isoTime();
      const ext = extension(input.language);
      if (previous && this.limits.maxVersions > 1) {
        // Keep the version being replaced before anything is overwritten.
        const oldExt = extension(previous.language);
        await keepVersion(join(folder, `script.${oldExt}`), join(versions, `${previous.version}.${oldExt}`));
      }
      const metadata: ScriptMetadata = {
        script_id: previous?.script_id ?? newId('script'),
        name,
        description: input.description,
        language: input.language,
        tags: [...new Set(input.tags)],
        packages: [...new Set(input.packages)],
        created_at: previous?.created_at ?? now,
        updated_at: now,
        last_run_at: previous?.last_run_at ?? null,
        run_count: previous?.run_count ?? 0,
        last_run_success: previous?.last_run_success ?? null,
        source_execution_id: input.sourceExecutionId ?? null,
        version: (previous?.version ?? 0) + 1,
      };
      await writeFileAtomic(join(folder, `script.${ext}`), input.code);
      await this.writeMetadata(name, metadata);
      if (previous && extension(previous.language) !== ext) {
        await rm(join(folder, `script.${extension(previous.language)}`), { force: true });
      }
      const pruned = await pruneVersions(versions, this.limits.maxVersions - 1);
      await this.catalog.changed(name, metadata);
      return { metadata, code: input.code, path: join(folder, `script.${ext}`), pruned };
    });
  }

  /** The current script, or an earlier `version` of its code. */
  async get(name: string, version?: number): Promise<StoredScript> {
    const metadata = await this.readMetadata(assertScriptName(name));
    const ext = extension(metadata.language);
    const current = join(this.dir, name, `script.${ext}`);
    if (version === undefined || version === metadata.version) {
      return { metadata, code: await readFile(current, 'utf8'), path: current };
    }
    const kept = await listVersions(join(this.dir, name, 'versions'));
    const found = kept.find((v) => v.number === version);
    if (!found)
      throw noVersion(
        name,
        version,
        metadata.version,
        kept.map((v) => v.number),
      );
    const path = join(this.dir, name, 'versions', found.file);
    return { metadata, code: await readFile(path, 'utf8'), path };
  }

  /** How many earlier versions are kept for `name`. */
  async versionCount(name: string): Promise<number> {
    return (await listVersions(join(this.dir, assertScriptName(name), 'versions'))).length;
  }

  list(): Promise<ScriptMetadata[]> {
    return this.exclusive(() => this.catalog.list());
  }

  recordRun(name: string, success: boolean): Promise<ScriptMetadata> {
    return this.exclusive(async () => {
      const metadata = {
        ...(await this.readMetadata(name)),
        last_run_at: isoTime(),
        last_run_success: success,
      };
      metadata.run_count += 1;
      await this.writeMetadata(name, metadata);
      await this.catalog.changed(name, metadata);
      return metadata;
    });
  }

  private writeMetadata(name: string, metadata: ScriptMetadata): Promise<void> {
    return writeFileAtomic(join(this.dir, name, 'metadata.json'), `${JSON.stringify(metadata, null, 2)}\n`);
  }

  private async readMetadata(name: string): Promise<ScriptMetadata> {
    let text: string;
    try {
      text = await readFile(join(this.dir, name, 'metadata.json'), 'utf8');
    } catch {
      throw noScript(name);
    }
    const parsed = scriptMetadataSchema().safeParse(safeJson(text));
    if (!parsed.success) throw new CodexecError('INTERNAL', `metadata of script ${name} is corrupt`);
    return parsed.data;
  }

  private exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task);
    this.queue = run.catch(() => {});
    return run;
  }
}
