// Reading a workspace's files: a session's (held by descriptor), execute_command's, an ended
// run's; shared by read_file and resources/read. Nothing is followed through a link, nothing
// outside reached (util/beneath), and text is masked like run output.
import { constants, mkdirSync, realpathSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { z } from 'zod';
import { commandWorkspace } from '../config/index.js';
import { CodexecError, ForbiddenPathError, InvalidInputError } from '../errors/index.js';
import type { SecretsFilter } from '../policy/index.js';
import { currentPrincipal, openBeneath, quotedPath, type Root, readUpTo } from '../util/index.js';
import type { Services } from './services.js';

/** Which workspace a file tool names, and the file's path in it. */
export const target = {
  session_id: z.string().min(1).optional().describe("the session's working directory"),
  workspace: z.enum(['command']).optional().describe("execute_command's workspace"),
  path: z.string().min(1).max(4096).describe('relative to the workspace; no "..", no absolute path'),
};

/** No such file in the workspace. */
export class FileNotFoundError extends CodexecError {
  constructor(message: string) {
    super('NOT_FOUND', message);
    this.name = 'FileNotFoundError';
  }
}

/** A file too big to move: the limit is a setting, named in the message. */
export class FileTooLargeError extends CodexecError {
  constructor(message: string) {
    super('LIMIT_REACHED', message);
    this.name = 'FileTooLargeError';
  }
}

/**
 * `data` as text with secrets masked (the same filter as run output), or undefined when it is not
 * UTF-8. Bytes that are not text are not filtered: a mask would corrupt them (a length, an offset,
 * a checksum) and a secret inside a binary format is rarely stored as the plain characters anyway.
 */
export function maskedText(data: Buffer, secrets: SecretsFilter | undefined): string | undefined {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(data);
  } catch {
    return undefined;
  }
  return secrets ? secrets.redact(text) : text;
}

/**
 * The target directory: a session's, held by descriptor since it started (never looked up again by
 * path: a rename or a symlink in its place changes nothing), or the command workspace, codexec's own.
 */
export function workspaceOf(services: Services, args: { session_id?: string; workspace?: 'command' }): Root {
  if ((args.session_id === undefined) === (args.workspace === undefined))
    throw new InvalidInputError('give exactly one of session_id or workspace');
  if (args.session_id !== undefined) return services.sessions.describe(args.session_id).dir;
  const workspace = commandWorkspace(services.config, currentPrincipal());
  mkdirSync(workspace, { recursive: true, mode: 0o700 }); // as execute_command makes it
  return realpathSync(workspace);
}

/**
 * Reads a regular file beneath the workspace (util/beneath: no symlink followed), at most
 * `limit` bytes (larger: refused). Shared by read_file and resources/read.
 */
export async function readConfined(root: Root, path: string, limit: number): Promise<Buffer> {
  let handle: FileHandle | undefined;
  try {
    handle = await openBeneath(root, path, constants.O_RDONLY | constants.O_NONBLOCK);
    const stat = await handle.stat();
    if (!stat.isFile()) throw new ForbiddenPathError(`${quotedPath(path)} is not a regular file`);
    const tooLarge = (what: string) =>
      new FileTooLargeError(
        `${quotedPath(path)} ${what}; the limit is ${limit} (CODEXEC_MAX_FILE_TRANSFER_BYTES)`,
      );
    if (stat.size > limit) throw tooLarge(`is ${stat.size} bytes`);
    // The stat only spares reading a file already too big: what counts is what the read got.
    const read = await readUpTo(handle, limit);
    if (read.over) throw tooLarge(`grew past ${limit} bytes as it was read`);
    return read.data;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new FileNotFoundError(`${quotedPath(path)}: no such file in the workspace`);
    if (code === 'ELOOP') throw new ForbiddenPathError(`${quotedPath(path)} is a symlink`);
    throw error;
  } finally {
    await handle?.close();
  }
}
