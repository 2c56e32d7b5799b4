// The shared libraries a set of ELF files loads, as the host's dynamic loader resolves them (ldd
// lists the whole closure, the loader itself included). An image built from host files needs
// exactly these beside the binaries, and nothing else of /usr/lib.
import { spawn } from 'node:child_process';
import { SandboxUnavailableError } from '../../errors/index.js';
import { findOnPath } from '../host/index.js';

/** Files per ldd call: one process for hundreds of extension modules, within any argv limit. */
const BATCH = 200;

/** Absolute paths of every library the files need; files that are not dynamic ELF add none. */
export async function sharedLibraries(files: readonly string[]): Promise<string[]> {
  const ldd = findOnPath('ldd');
  if (!ldd) throw new SandboxUnavailableError('ldd was not found; it lists the libraries to copy (libc-bin)');
  const found = new Set<string>();
  for (let start = 0; start < files.length; start += BATCH) {
    const output = await listed(ldd, files.slice(start, start + BATCH));
    for (const path of parseLdd(output)) found.add(path);
  }
  return [...found].sort();
}

/** The library paths in ldd's output: `name => /path (addr)` and the loader's `/path (addr)`. */
export function parseLdd(output: string): string[] {
  const paths: string[] = [];
  for (const line of output.split('\n')) {
    const match = /^\s+(?:\S+ => )?(\/\S+) \(0x[0-9a-f]+\)$/.exec(line);
    if (match?.[1]) paths.push(match[1]);
  }
  return paths;
}

/** ldd's stdout. It exits 1 when any file is not dynamic (scripts, static binaries): expected here. */
function listed(ldd: string, files: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(ldd, files, { stdio: ['ignore', 'pipe', 'ignore'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.on('error', (error) => reject(new SandboxUnavailableError(`ldd could not run: ${error.message}`)));
    child.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}
