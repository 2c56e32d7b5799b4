// Streams a --from-host image into the engine: codexec's own records, then GNU tar reading the
// host's files by name, piped into `<engine> import -`. No copy of the files is ever staged on disk.
import { type ChildProcess, spawn } from 'node:child_process';
import { SandboxUnavailableError } from '../../errors/index.js';
import { findOnPath } from '../host/index.js';
import type { ContainerEngine } from './engine.js';
import { type TarEntry, tarEntries } from './tar.js';

/** How much of a failing process's stderr is kept for the error message. */
const TAIL = 4000;

/**
 * tar arguments for the host part: names from stdin, NUL-separated, taken as they are (no
 * recursion: the list is complete), owned by root, setuid and setgid bits dropped.
 */
export function hostTarArgs(): string[] {
  return [
    '--create',
    '--file=-',
    '--directory=/',
    '--no-recursion',
    '--numeric-owner',
    '--owner=0',
    '--group=0',
    '--mode=u-s,g-s',
    '--null',
    '--verbatim-files-from',
    '--files-from=-',
  ];
}

/** Runs the pipe; resolves when the engine has stored the image, rejects (nothing tagged) otherwise. */
export async function importArchive(
  engine: ContainerEngine,
  importArgs: readonly string[],
  own: readonly TarEntry[],
  names: readonly string[],
): Promise<void> {
  const tarBinary = findOnPath('tar');
  if (!tarBinary) throw new SandboxUnavailableError('tar was not found; --from-host needs GNU tar');
  const importer = spawn(engine.binary, importArgs, { stdio: ['pipe', 'ignore', 'pipe'] });
  const tar = spawn(tarBinary, hostTarArgs(), { stdio: ['pipe', 'pipe', 'pipe'] });
  const importerDone = exited(importer);
  const tarDone = exited(tar);
  try {
    // A broken pipe shows as the importer's own failure below; the write error adds nothing.
    importer.stdin?.on('error', () => undefined);
    tar.stdin?.on('error', () => undefined);
    importer.stdin?.write(tarEntries(own));
    // Ended only once tar succeeded: a cut-short archive must never be imported and tagged.
    tar.stdout?.pipe(importer.stdin as NodeJS.WritableStream, { end: false });
    tar.stdin?.end(`${names.join('\0')}\0`);
    // An importer that stops early (no daemon, no space) must not leave tar blocked on a full pipe.
    void importerDone.then(() => running(tar) && tar.kill());
    const tarExit = await tarDone;
    if (tarExit.code !== 0) {
      if (running(importer)) importer.kill('SIGKILL');
      const importExit = await importerDone;
      if (importExit.code !== 0 && importExit.code !== null) throw importFailed(engine, importExit);
      throw new SandboxUnavailableError(`tar of the host files failed: ${tarExit.stderr}`);
    }
    importer.stdin?.end();
    const importExit = await importerDone;
    if (importExit.code !== 0) throw importFailed(engine, importExit);
  } finally {
    for (const child of [tar, importer]) if (running(child)) child.kill();
  }
}

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

const importFailed = (engine: ContainerEngine, exit: Exited) =>
  new SandboxUnavailableError(`${engine.name} import failed: ${exit.stderr || `exit ${exit.code}`}`);

interface Exited {
  readonly code: number | null;
  readonly stderr: string;
}

/** Exit code and the end of stderr; a spawn failure counts as exit 127 with its message. */
function exited(child: ChildProcess): Promise<Exited> {
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-TAIL);
  });
  return new Promise((resolve) => {
    child.on('error', (error) => resolve({ code: 127, stderr: error.message }));
    child.on('close', (code) => resolve({ code, stderr: stderr.trim() }));
  });
}
