import { copyFile, link, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { log } from '../util/index.js';

/** One earlier version of a script's code: `versions/<number>.<ext>`. */
export interface VersionFile {
  readonly number: number;
  readonly file: string;
}

/** The earlier versions kept in `versionsDir`, oldest first (anything else there is ignored). */
export async function listVersions(versionsDir: string): Promise<VersionFile[]> {
  const files = await readdir(versionsDir).catch(() => [] as string[]);
  const versions: VersionFile[] = [];
  for (const file of files) {
    const match = /^([1-9][0-9]{0,9})\.[a-z]+$/.exec(file);
    if (match?.[1]) versions.push({ number: Number(match[1]), file });
  }
  return versions.sort((a, b) => a.number - b.number);
}

/**
 * Keep the code about to be replaced as `target`: a hard link (no copy, whatever the code's size;
 * the current file is then replaced by rename, so the link keeps the old contents), or a copy
 * where the disk has no links. A `target` that exists already is kept: it was made from this very
 * version by a save that stopped before its metadata was written, before anything was replaced.
 */
export async function keepVersion(current: string, target: string): Promise<void> {
  try {
    await link(current, target);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return;
    if (code === 'ENOENT') {
      log('warn', `script file ${current} is missing; its version is not kept`);
      return;
    }
    await copyFile(current, target);
  }
}

/**
 * Remove the earlier versions older than the newest `keepEarlier`; returns how many went. Its cost
 * is the number of versions this one script has, never the size of the library.
 */
export async function pruneVersions(versionsDir: string, keepEarlier: number): Promise<number> {
  const versions = await listVersions(versionsDir);
  const doomed = versions.slice(0, Math.max(0, versions.length - keepEarlier));
  for (const { file } of doomed) await rm(join(versionsDir, file), { force: true });
  return doomed.length;
}
