import { copyFile, mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CodexecError } from '../errors/index.js';
import { log, newId } from '../util/index.js';
import { writeFileAtomic } from './atomic.js';
import { assertScriptName } from './names.js';
import {
  type SaveScriptInput,
  type ScriptIndex,
  type ScriptMetadata,
  type StoredScript,
  scriptIndexSchema,
  scriptMetadataSchema,
} from './types.js';

const EXTENSIONS: Record<ScriptMetadata['language'], string> = {
  python: 'py',
  node: 'js',
  typescript: 'ts',
  bash: 'sh',
};
const extension = (language: ScriptMetadata['language']) => EXTENSIONS[language];

/**
 * The script library on disk, exactly the seed's layout: `<dir>/index.json` plus one folder per
 * script with `script.<ext>` and `metadata.json`; earlier versions in `versions/<n>.<ext>`.
 * Each folder's metadata.json is the truth; index.json is a cache rebuilt whenever it is missing,
 * corrupt or disagrees with the folders. Mutations are serialized and every write is atomic.
 */
export class ScriptStore {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly dir: string) {}

  save(input: SaveScriptInput): Promise<StoredScript> {
    return this.exclusive(async () => {
      const name = assertScriptName(input.name);
      const folder = join(this.dir, name);
      await mkdir(join(folder, 'versions'), { recursive: true });
      const previous = await this.readMetadata(name).catch(() => undefined);
      const now = new Date().toISOString();
      const ext = extension(input.language);
      if (previous) {
        // Keep the version being replaced before anything is overwritten.
        const oldExt = extension(previous.language);
        await copyFile(
          join(folder, `script.${oldExt}`),
          join(folder, 'versions', `${previous.version}.${oldExt}`),
        );
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
      await writeFileAtomic(join(folder, 'metadata.json'), `${JSON.stringify(metadata, null, 2)}\n`);
      if (previous && extension(previous.language) !== ext) {
        await rm(join(folder, `script.${extension(previous.language)}`), { force: true });
      }
      await this.updateIndex((scripts) => [...scripts.filter((s) => s.name !== name), metadata]);
      return { metadata, code: input.code, path: join(folder, `script.${ext}`) };
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
    const files = await readdir(join(this.dir, name, 'versions')).catch(() => []);
    const file = files.find((f) => f.startsWith(`${version}.`));
    if (!file) {
      throw new CodexecError(
        'NOT_FOUND',
        `script ${name} has no version ${version} (current: ${metadata.version})`,
      );
    }
    const path = join(this.dir, name, 'versions', file);
    return { metadata, code: await readFile(path, 'utf8'), path };
  }

  /** How many earlier versions are kept for `name`. */
  async versionCount(name: string): Promise<number> {
    return (await readdir(join(this.dir, assertScriptName(name), 'versions')).catch(() => [])).length;
  }

  async list(): Promise<ScriptMetadata[]> {
    return (await this.loadIndex()).scripts;
  }

  recordRun(name: string, success: boolean): Promise<ScriptMetadata> {
    return this.exclusive(async () => {
      const metadata = {
        ...(await this.readMetadata(name)),
        last_run_at: new Date().toISOString(),
        last_run_success: success,
      };
      metadata.run_count += 1;
      await writeFileAtomic(join(this.dir, name, 'metadata.json'), `${JSON.stringify(metadata, null, 2)}\n`);
      await this.updateIndex((scripts) => scripts.map((s) => (s.name === name ? metadata : s)));
      return metadata;
    });
  }

  private async readMetadata(name: string): Promise<ScriptMetadata> {
    let text: string;
    try {
      text = await readFile(join(this.dir, name, 'metadata.json'), 'utf8');
    } catch {
      throw new CodexecError('NOT_FOUND', `no script named ${name}; list_scripts shows what is saved`);
    }
    const parsed = scriptMetadataSchema.safeParse(safeJson(text));
    if (!parsed.success) throw new CodexecError('INTERNAL', `metadata of script ${name} is corrupt`);
    return parsed.data;
  }

  private async updateIndex(change: (scripts: ScriptMetadata[]) => ScriptMetadata[]): Promise<void> {
    const index = await this.loadIndex();
    const scripts = change(index.scripts).sort((a, b) => a.name.localeCompare(b.name));
    await writeFileAtomic(
      join(this.dir, 'index.json'),
      `${JSON.stringify({ version: 1, scripts }, null, 2)}\n`,
    );
  }

  /** index.json when it agrees with the folders; otherwise rebuilt from every metadata.json. */
  private async loadIndex(): Promise<ScriptIndex> {
    const names = await this.folderNames();
    let reason = 'missing';
    try {
      const parsed = scriptIndexSchema.safeParse(
        safeJson(await readFile(join(this.dir, 'index.json'), 'utf8')),
      );
      if (parsed.success) {
        const indexed = parsed.data.scripts.map((s) => s.name).sort();
        if (indexed.join('\n') === names.join('\n')) return parsed.data;
        reason = 'out of date';
      } else reason = 'corrupt';
    } catch {
      if (names.length === 0) return { version: 1, scripts: [] };
    }
    log(
      'warn',
      `script index ${reason}; rebuilding ${join(this.dir, 'index.json')} from ${names.length} script folders`,
    );
    const scripts: ScriptMetadata[] = [];
    for (const name of names) {
      try {
        scripts.push(await this.readMetadata(name));
      } catch (error) {
        log('warn', `skipping script folder ${name}: ${(error as Error).message}`);
      }
    }
    const index: ScriptIndex = { version: 1, scripts };
    await mkdir(this.dir, { recursive: true });
    await writeFileAtomic(join(this.dir, 'index.json'), `${JSON.stringify(index, null, 2)}\n`);
    return index;
  }

  private async folderNames(): Promise<string[]> {
    const entries = await readdir(this.dir, { withFileTypes: true }).catch(() => []);
    const names: string[] = [];
    for (const entry of entries) {
      if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
      const hasMetadata = await readFile(join(this.dir, entry.name, 'metadata.json')).then(
        () => true,
        () => false,
      );
      if (hasMetadata) names.push(entry.name);
    }
    return names.sort();
  }

  private exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task);
    this.queue = run.catch(() => {});
    return run;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
