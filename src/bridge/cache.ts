import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { log } from '../util/index.js';
import type { DownstreamSpec } from './config.js';
import type { ToolInfo } from './types.js';

// The tools each downstream server listed, kept on disk (LRU, 24 h, served stale when a server is down): a
// restarted codexec answers discovery without starting or reaching any server, and a server that is
// down is still described by what it listed last. An entry belongs to the server's exact spec
// (command, args, url…), so a changed config never serves another server's tools.

export const FRESH_MS = 24 * 3600_000;
const MAX_ENTRIES = 100;

interface Entry {
  readonly spec: string;
  readonly at: number;
  readonly tools: ToolInfo[];
}

export interface Cached {
  readonly tools: ToolInfo[];
  readonly fresh: boolean;
}

export class SchemaCache {
  private entries: Record<string, Entry> | undefined;

  constructor(
    private readonly file: string,
    private readonly now: () => number = Date.now,
  ) {}

  get(server: string, spec: DownstreamSpec): Cached | undefined {
    const entry = this.load()[server];
    if (!entry || entry.spec !== specKey(spec)) return undefined;
    return { tools: entry.tools, fresh: this.now() - entry.at < FRESH_MS };
  }

  set(server: string, spec: DownstreamSpec, tools: ToolInfo[]): void {
    const entries = { ...this.load() };
    delete entries[server];
    entries[server] = { spec: specKey(spec), at: this.now(), tools };
    // Least recently listed first out.
    const names = Object.keys(entries).sort((a, b) => (entries[a]?.at ?? 0) - (entries[b]?.at ?? 0));
    for (const name of names.slice(0, Math.max(0, names.length - MAX_ENTRIES))) delete entries[name];
    this.entries = entries;
    try {
      mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
      const temp = `${this.file}.${process.pid}.tmp`;
      writeFileSync(temp, JSON.stringify(entries), { mode: 0o600 });
      renameSync(temp, this.file);
    } catch (error) {
      log('warn', `code mode: could not write the tool cache ${this.file}: ${(error as Error).message}`);
    }
  }

  private load(): Record<string, Entry> {
    if (this.entries) return this.entries;
    try {
      const parsed = JSON.parse(readFileSync(this.file, 'utf8')) as unknown;
      this.entries = parsed && typeof parsed === 'object' ? (parsed as Record<string, Entry>) : {};
    } catch {
      this.entries = {}; // none yet, or unreadable: it is only a cache
    }
    return this.entries;
  }
}

function specKey(spec: DownstreamSpec): string {
  return createHash('sha256').update(JSON.stringify(spec)).digest('hex');
}
