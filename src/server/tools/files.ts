// write_file / read_file (DESIGN §8 "Rich output and files"): move files into and out of a
// session's workspace or execute_command's persistent workspace. Writing a file is not running
// code, but it changes what code will see, so write_file exists only when CODEXEC_ENABLED is on;
// read_file is read-only and always there.
import { constants, mkdirSync, realpathSync } from 'node:fs';
import { chown, lstat, mkdir, open, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, join, sep } from 'node:path';
import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { CodexecError, ForbiddenPathError, InvalidInputError } from '../../errors/index.js';
import { defineTool } from '../define-tool.js';
import type { Services } from '../services.js';

const target = {
  session_id: z.string().min(1).optional().describe("a session's id: its working directory"),
  workspace: z
    .enum(['command'])
    .optional()
    .describe('"command": execute_command\'s persistent workspace (CODEXEC_WORKSPACE)'),
  path: z.string().min(1).max(4096).describe('relative to the workspace; no "..", no absolute path'),
};

const writeInput = z.object({
  ...target,
  content: z.string().describe('the file content, as text or base64 per encoding'),
  encoding: z.enum(['utf8', 'base64']).default('utf8'),
});
const readInput = z.object({ ...target, encoding: z.enum(['utf8', 'base64']).default('utf8') });

const writeOutput = z.object({
  success: z.boolean(),
  path: z.string(),
  bytes: z.number(),
  working_dir: z.string(),
});
const readOutput = z.object({
  success: z.boolean(),
  path: z.string(),
  bytes: z.number(),
  encoding: z.enum(['utf8', 'base64']),
  content: z.string(),
  working_dir: z.string(),
});

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

export function registerFileTools(server: McpServer, services: Services): void {
  const limit = services.config.maxFileTransferBytes;
  if (services.config.gate.enabled) {
    defineTool(server, {
      name: 'write_file',
      title: 'Write a file into a workspace',
      description:
        'Write a file into a session\'s working directory (session_id) or execute_command\'s workspace (workspace: "command"). ' +
        'Parent directories are created; an existing file is replaced. encoding base64 for binary content.',
      input: writeInput,
      output: writeOutput,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      handler: async (args) => {
        const root = workspaceOf(services, args);
        const data =
          args.encoding === 'base64' ? decodeBase64(args.content) : Buffer.from(args.content, 'utf8');
        if (data.length > limit)
          throw new FileTooLargeError(
            `content is ${data.length} bytes; the limit is ${limit} (CODEXEC_MAX_FILE_TRANSFER_BYTES)`,
          );
        const file = await confinedForWrite(root, args.path);
        await writeConfined(root, file, data);
        return { success: true, path: args.path, bytes: data.length, working_dir: root };
      },
    });
  }
  defineTool(server, {
    name: 'read_file',
    title: 'Read a file from a workspace',
    description:
      'Read a file from a session\'s working directory (session_id) or execute_command\'s workspace (workspace: "command"). ' +
      'encoding utf8 (default) refuses a file that is not UTF-8 text: use base64 for it.',
    input: readInput,
    output: readOutput,
    annotations: { readOnlyHint: true, openWorldHint: false },
    handler: async (args) => {
      const root = workspaceOf(services, args);
      const data = await readConfined(root, args.path, limit);
      let content: string;
      if (args.encoding === 'base64') content = data.toString('base64');
      else {
        try {
          content = new TextDecoder('utf-8', { fatal: true }).decode(data);
        } catch {
          throw new InvalidInputError(`${args.path} is not UTF-8 text; read it with encoding "base64"`);
        }
      }
      return {
        success: true,
        path: args.path,
        bytes: data.length,
        encoding: args.encoding,
        content,
        working_dir: root,
      };
    },
  });
}

/** The real path of the target workspace: a session's cwd, or the command workspace. */
function workspaceOf(services: Services, args: { session_id?: string; workspace?: 'command' }): string {
  if ((args.session_id === undefined) === (args.workspace === undefined))
    throw new InvalidInputError('give exactly one of session_id or workspace');
  if (args.session_id !== undefined)
    return realpathSync(services.sessions.describe(args.session_id).workingDir);
  mkdirSync(services.config.command.workspace, { recursive: true });
  return realpathSync(services.config.command.workspace);
}

function decodeBase64(content: string): Buffer {
  const compact = content.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1)
    throw new InvalidInputError('content is not valid base64');
  return Buffer.from(compact, 'base64');
}

/** Relative, no "..", no NUL: the lexical half of confinement (the real-path half follows). */
function segmentsOf(path: string): string[] {
  if (path.includes('\0') || isAbsolute(path))
    throw new ForbiddenPathError(`${JSON.stringify(path)}: the path must be relative to the workspace`);
  const segments = path.split(/[/\\]+/).filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..'))
    throw new ForbiddenPathError(`${JSON.stringify(path)}: ".." may not appear in the path`);
  if (segments.length === 0) throw new ForbiddenPathError(`${JSON.stringify(path)}: names no file`);
  return segments;
}

function inside(root: string, real: string): boolean {
  return real === root || real.startsWith(root.endsWith(sep) ? root : root + sep);
}

async function realInside(root: string, path: string, shown: string): Promise<string> {
  const real = await realpath(path);
  if (!inside(root, real))
    throw new ForbiddenPathError(`${JSON.stringify(shown)} leads outside the workspace (through a symlink)`);
  return real;
}

/**
 * The real path a write lands on. Parent directories are walked one at a time (created when
 * missing), each resolved and checked, so a symlinked directory never makes mkdir act outside.
 */
async function confinedForWrite(root: string, path: string): Promise<string> {
  const segments = segmentsOf(path);
  let dir = root;
  for (const segment of segments.slice(0, -1)) {
    const next = join(dir, segment);
    const stat = await lstat(next).catch(() => undefined);
    if (!stat) {
      await mkdir(next, { mode: 0o755 });
      await lendToOwner(root, next);
      dir = next;
      continue;
    }
    const real = await realInside(root, next, path);
    const resolved = stat.isSymbolicLink() ? await lstat(real) : stat;
    if (!resolved.isDirectory())
      throw new ForbiddenPathError(`${JSON.stringify(path)}: ${segment} is not a directory`);
    dir = real;
  }
  const file = join(dir, segments[segments.length - 1] as string);
  const stat = await lstat(file).catch(() => undefined);
  if (!stat) return file;
  const real = stat.isSymbolicLink()
    ? await realInside(root, file, path).catch(symlinkTarget(file, root, path))
    : file;
  const resolved = await lstat(real).catch(() => undefined);
  if (resolved && !resolved.isFile())
    throw new ForbiddenPathError(`${JSON.stringify(path)} is not a regular file`);
  return real;
}

/** A dangling symlink: where it would create a file, still checked against the workspace. */
function symlinkTarget(file: string, root: string, shown: string) {
  return async (): Promise<string> => {
    throw new ForbiddenPathError(`${JSON.stringify(shown)} is a symlink to nothing (${file} under ${root})`);
  };
}

async function writeConfined(root: string, file: string, data: Buffer): Promise<void> {
  // O_NOFOLLOW: a symlink swapped in after the checks is refused (ELOOP) rather than followed.
  const handle = await open(
    file,
    constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
    0o644,
  ).catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'ELOOP' ? new ForbiddenPathError(`${file} turned into a symlink`) : error;
  });
  try {
    if (!(await handle.stat()).isFile()) throw new ForbiddenPathError(`${file} is not a regular file`);
    await handle.writeFile(data);
  } finally {
    await handle.close();
  }
  await lendToOwner(root, file);
}

/**
 * Root writes the file; code in the workspace runs as the workspace's owner (a user's dir) or
 * gets root-owned files lent for the run (ownership.ts). Give new entries to the workspace owner
 * so both cases can read and modify them.
 */
async function lendToOwner(root: string, path: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const owner = await lstat(root);
  if (owner.uid !== 0) await chown(path, owner.uid, owner.gid).catch(() => {});
}

/** Reads a regular file inside the workspace, at most `limit` bytes (larger: refused). */
export async function readConfined(root: string, path: string, limit: number): Promise<Buffer> {
  segmentsOf(path);
  const real = await realInside(root, join(root, path), path).catch(async (error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
    if ((await lstat(join(root, path)).catch(() => undefined))?.isSymbolicLink())
      throw new ForbiddenPathError(`${JSON.stringify(path)} is a symlink to nothing`);
    // Missing: say so only if the part that exists stays inside (else it is an escape, not a miss).
    await realInside(root, await deepestExisting(join(root, path)), path);
    throw new FileNotFoundError(`${JSON.stringify(path)}: no such file in the workspace`);
  });
  const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
    (error: NodeJS.ErrnoException) => {
      throw error.code === 'ELOOP'
        ? new ForbiddenPathError(`${JSON.stringify(path)} turned into a symlink`)
        : error;
    },
  );
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new ForbiddenPathError(`${JSON.stringify(path)} is not a regular file`);
    if (stat.size > limit)
      throw new FileTooLargeError(
        `${path} is ${stat.size} bytes; the limit is ${limit} (CODEXEC_MAX_FILE_TRANSFER_BYTES)`,
      );
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

async function deepestExisting(path: string): Promise<string> {
  let current = dirname(path);
  while ((await lstat(current).catch(() => undefined)) === undefined && current !== dirname(current))
    current = dirname(current);
  return current;
}
