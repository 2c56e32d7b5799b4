// Pictures a run made, for results to carry as MCP image content: Python figures (saved by the
// matplotlib backend drivers/mpl/codexec_figures.py into a hidden folder of the workspace) first,
// then image files among the artifacts. Bounded in size and count; what is left out is named.
import { constants, lstatSync } from 'node:fs';
import { type FileHandle, readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { openBeneath, packagePath, type Root, readUpTo, unlinkBeneath } from '../util/index.js';

/** The workspace folder figures are saved in; left out of artifact lists (generated.ts). */
export const FIGURES_DIR = '.codexec-figures';
/** At most this many images per result (figures first). */
export const MAX_IMAGES = 4;

/** The backend module, bound read-only into Python sandboxes; its folder is on their PYTHONPATH. */
export const FIGURE_BACKEND = packagePath('drivers', 'mpl', 'codexec_figures.py');
/**
 * Beside it, bound too: puts $CODEXEC_PYTHON_PACKAGES after the standard library (PYTHONPATH would
 * put installed packages first, where they could shadow it).
 */
export const SITE_CUSTOMIZE = join(dirname(FIGURE_BACKEND), 'sitecustomize.py');
/** The files Python sandboxes bind read-only from that folder. */
export const PYTHON_SUPPORT_FILES: readonly string[] = [FIGURE_BACKEND, SITE_CUSTOMIZE];

/** One picture of a result. `data` is not enumerable: it never goes into the JSON, only into content. */
export interface ResultImage {
  readonly mime_type: string;
  /** Relative to working_dir, for image files; absent for figures. */
  readonly path?: string;
  readonly data?: Buffer;
}

export interface SkippedImage {
  /** Absent for a figure. */
  readonly path?: string;
  readonly reason: 'too_large' | 'too_many';
}

export interface CollectedImages {
  images: ResultImage[];
  /** Present only when something was left out. */
  images_skipped?: SkippedImage[];
}

/**
 * The variables that make a Python run's figures come back: the non-interactive backend that saves
 * them, where to, and matplotlib's config dir and the caches (fontconfig's, written when matplotlib
 * lists the fonts through fc-list) inside the workspace's hidden folder: HOME is the workspace,
 * where they would otherwise show up as artifacts (`.config/matplotlib`, `.cache/fontconfig`).
 */
export function figureEnv(workspace: string, pythonPath?: string): Record<string, string> {
  const folder = join(workspace, FIGURES_DIR);
  return {
    MPLBACKEND: 'module://codexec_figures',
    CODEXEC_FIGURES_DIR: folder,
    MPLCONFIGDIR: join(folder, 'mplconfig'),
    XDG_CACHE_HOME: join(folder, 'cache'),
    PYTHONPATH: [pythonPath, dirname(FIGURE_BACKEND)].filter(Boolean).join(':'),
  };
}

const EXTENSIONS: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
};

/** The type the bytes say, or undefined: a `.png` that holds text is no image. */
export function sniffImage(head: Buffer): string | undefined {
  const at = (offset: number, text: string) =>
    head.subarray(offset, offset + text.length).toString('latin1') === text;
  if (head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return 'image/png';
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg';
  if (at(0, 'GIF87a') || at(0, 'GIF89a')) return 'image/gif';
  if (at(0, 'RIFF') && at(8, 'WEBP')) return 'image/webp';
  return undefined;
}

export interface CollectInput {
  /** The run's workspace (its figures folder); undefined when figures cannot exist. */
  readonly workspace?: string | undefined;
  readonly workingDir: Root;
  readonly artifacts: readonly string[];
  readonly maxBytes: number;
}

/** Read the run's figures (removing them) and image artifacts, within the limits. */
export async function collectImages(input: CollectInput): Promise<CollectedImages> {
  const images: ResultImage[] = [];
  const skipped: SkippedImage[] = [];
  const take = (mime_type: string, data: Buffer, path?: string) => {
    const entry = { mime_type, ...(path !== undefined && { path }) };
    Object.defineProperty(entry, 'data', { value: data, enumerable: false });
    images.push(entry);
  };
  for (const figure of await figureFiles(input.workspace)) {
    const read = await readImage(input.workspace as string, figure, input.maxBytes);
    await unlinkBeneath(input.workspace as string, figure).catch(() => {});
    if (read === 'too_large') skipped.push({ reason: 'too_large' });
    else if (read && images.length >= MAX_IMAGES) skipped.push({ reason: 'too_many' });
    else if (read) take(read.mime, read.data);
  }
  const candidates = input.artifacts.filter((path) => EXTENSIONS[extension(path)] !== undefined);
  if (candidates.length === 0) return finish(images, skipped);
  for (const path of candidates) {
    // Only a regular file beneath the working dir: a link the code made must not read the host.
    const read = await readImage(input.workingDir, path, input.maxBytes);
    if (read === undefined || read === 'too_large') {
      if (read === 'too_large') skipped.push({ path, reason: 'too_large' });
      continue;
    }
    if (read.mime !== EXTENSIONS[extension(path)]) continue;
    if (images.length >= MAX_IMAGES) skipped.push({ path, reason: 'too_many' });
    else take(read.mime, read.data, path);
  }
  return finish(images, skipped);
}

function finish(images: ResultImage[], skipped: SkippedImage[]): CollectedImages {
  return skipped.length > 0 ? { images, images_skipped: skipped } : { images };
}

function extension(path: string): string {
  const dot = path.lastIndexOf('.');
  return dot < 0 ? '' : path.slice(dot + 1).toLowerCase();
}

/** The figure files, relative to the workspace, oldest first (numbered by the backend). */
async function figureFiles(workspace: string | undefined): Promise<string[]> {
  if (workspace === undefined) return [];
  // A stat on this thread (µs) spares every run without matplotlib the thread pool's round trip;
  // a link in its place lists nothing (and the reads below never follow one).
  if (!lstatSync(join(workspace, FIGURES_DIR), { throwIfNoEntry: false })?.isDirectory()) return [];
  const names = await readdir(join(workspace, FIGURES_DIR)).catch(() => [] as string[]);
  return names
    .filter((name) => /^figure-\d+\.png$/.test(name))
    .sort((a, b) => Number(a.slice(7, -4)) - Number(b.slice(7, -4)))
    .map((name) => `${FIGURES_DIR}/${name}`);
}

/** The bytes and sniffed type of a regular file beneath `root` (never through a link), or why not. */
async function readImage(
  root: Root,
  path: string,
  maxBytes: number,
): Promise<{ mime: string; data: Buffer } | 'too_large' | undefined> {
  let handle: FileHandle | undefined;
  try {
    handle = await openBeneath(root, path, constants.O_RDONLY | constants.O_NONBLOCK);
    const stats = await handle.stat();
    if (!stats.isFile()) return undefined;
    const head = Buffer.alloc(12);
    await handle.read(head, 0, 12, 0);
    const mime = sniffImage(head);
    if (mime === undefined) return undefined;
    if (stats.size > maxBytes) return 'too_large';
    // Bounded by what is read: the file may grow after the stat (code is still writing it).
    const { data, over } = await readUpTo(handle, maxBytes);
    return over ? 'too_large' : { mime, data };
  } catch {
    return undefined; // vanished or unreadable: no picture, the artifact list still names it
  } finally {
    await handle?.close();
  }
}
