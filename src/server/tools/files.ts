// write_file / read_file: move files into and out of a
// session's workspace or execute_command's persistent workspace. Writing a file is not running
// code, but it changes what code will see, so write_file exists only when CODEXEC_ENABLED is on;
// read_file is read-only and always there.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, mkdirSync, realpathSync } from 'node:fs';
import { type FileHandle, lstat, open, rename, unlink } from 'node:fs/promises';
import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { commandWorkspace } from '../../config/index.js';
import { CodexecError, ForbiddenPathError, InvalidInputError } from '../../errors/index.js';
import { EXECUTION_ID } from '../../outputs/index.js';
import type { SecretsFilter } from '../../policy/index.js';
import {
  actingAs,
  assertMay,
  at,
  currentPrincipal,
  inParentBeneath,
  openBeneath,
  openRoot,
  pathOf,
  quotedPath,
  type Root,
  readUpTo,
  SEARCH,
  shownName,
  WRITE,
} from '../../util/index.js';
import { defineTool } from '../define-tool.js';
import type { Gatekeeper } from '../guard.js';
import { DEFAULT_SLICE_BYTES, readSavedSlice } from '../saved-output.js';
import type { Services } from '../services.js';

const target = {
  session_id: z.string().min(1).optional().describe("the session's working directory"),
  workspace: z.enum(['command']).optional().describe("execute_command's workspace"),
  path: z.string().min(1).max(4096).describe('relative to the workspace; no "..", no absolute path'),
};

const writeInput = z.object({
  ...target,
  content: z.string(),
  encoding: z.enum(['utf8', 'base64']).default('utf8'),
});
const readInput = z.object({
  ...target,
  path: z
    .string()
    .min(1)
    .max(4096)
    .describe('relative to the workspace, without ".."; with execution_id: "stdout" or "stderr"'),
  encoding: z.enum(['utf8', 'base64']).default('utf8'),
  execution_id: z
    .string()
    .regex(EXECUTION_ID, 'expected exec_ + 12 hex, from a result')
    .optional()
    .describe("a truncated run's id: read its whole stdout or stderr"),
  offset: z.number().int().min(0).optional().describe('with execution_id: the byte to start at'),
  length: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`with execution_id: bytes to read (default ${DEFAULT_SLICE_BYTES})`),
});

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
  working_dir: z.string().optional().describe("the workspace read (absent for a run's saved output)"),
  execution_id: z.string().optional().describe('with execution_id: the run whose output this is'),
  total_bytes: z.number().int().optional().describe("with execution_id: the saved stream's size"),
  offset: z.number().int().optional().describe('with execution_id: where this slice starts'),
  next_offset: z
    .number()
    .int()
    .nullable()
    .optional()
    .describe('with execution_id: where the next slice starts; null at the end'),
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

export function registerFileTools(server: McpServer, services: Services, gate: Gatekeeper): void {
  // write_file changes a workspace as code would: it exists only while CODEXEC_ENABLED is true.
  if (services.config.gate.enabled) registerWriteFile(server, services, gate);
  registerReadFile(server, services);
}

function registerWriteFile(server: McpServer, services: Services, gate: Gatekeeper): void {
  const limit = services.config.maxFileTransferBytes;
  defineTool(server, {
    name: 'write_file',
    title: 'Write a file into a workspace',
    description:
      "Write a file into a session's working directory (session_id) or execute_command's workspace " +
      '(workspace: "command"), making parent directories, replacing a file; base64 for binary content.',
    input: writeInput,
    output: writeOutput,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    handler: async (args, ctx) => {
      const root = workspaceOf(services, args);
      const data =
        args.encoding === 'base64' ? decodeBase64(args.content) : Buffer.from(args.content, 'utf8');
      if (data.length > limit)
        throw new FileTooLargeError(
          `content is ${data.length} bytes; the limit is ${limit} (CODEXEC_MAX_FILE_TRANSFER_BYTES)`,
        );
      // Approval and the audit entry as for code (CODEXEC_APPROVAL): what is asked shows the
      // path, the size and the first lines.
      const language =
        args.session_id !== undefined ? services.sessions.describe(args.session_id).language : 'bash';
      return gate.run(
        ctx,
        {
          tool: 'write_file',
          language,
          code: writeSummary(args.path, data),
          sessionId: args.session_id ?? null,
          runs: false,
        },
        async () => {
          await writeConfined(root, args.path, data);
          return {
            success: true,
            path: shownName(args.path),
            bytes: data.length,
            working_dir: pathOf(root),
          };
        },
        () => ({ execution_id: null, exit_code: null, duration_ms: null, stdout: '' }),
      );
    },
  });
}

function registerReadFile(server: McpServer, services: Services): void {
  const limit = services.config.maxFileTransferBytes;
  defineTool(server, {
    name: 'read_file',
    title: "Read a file from a workspace, or a run's saved output",
    description:
      "Read a file from a session's working directory (session_id) or execute_command's workspace " +
      '(workspace: "command"); base64 for a file that is not UTF-8 text. With execution_id: a slice of a ' +
      "truncated run's whole stdout or stderr, in bytes, and next_offset (null at the end).",
    input: readInput,
    output: readOutput,
    text: { plain: ['content'] },
    annotations: { readOnlyHint: true, openWorldHint: false },
    handler: async (args) => {
      if (args.execution_id !== undefined)
        return readSaved(services, { ...args, execution_id: args.execution_id });
      if (args.offset !== undefined || args.length !== undefined)
        throw new InvalidInputError("offset and length page a run's saved output: give execution_id");
      const root = workspaceOf(services, args);
      const data = await readConfined(root, args.path, limit);
      // Secrets are masked in text, whichever encoding carries it (base64 is no way around the
      // filter); bytes that are not UTF-8 go out as they are (see maskedText).
      const text = maskedText(data, services.secrets);
      let content: string;
      if (args.encoding === 'base64')
        content = text === undefined ? data.toString('base64') : Buffer.from(text).toString('base64');
      else if (text === undefined)
        throw new InvalidInputError(
          `${quotedPath(args.path)} is not UTF-8 text; read it with encoding "base64"`,
        );
      else content = text;
      return {
        success: true,
        path: shownName(args.path),
        bytes: data.length,
        encoding: args.encoding,
        content,
        working_dir: pathOf(root),
      };
    },
  });
}

/** read_file {execution_id, path: "stdout"|"stderr", offset, length}: a slice of saved output. */
async function readSaved(
  services: Services,
  args: z.output<typeof readInput> & { execution_id: string },
): Promise<z.input<typeof readOutput>> {
  if (args.session_id !== undefined || args.workspace !== undefined)
    throw new InvalidInputError('give execution_id or a workspace (session_id, workspace), not both');
  if (args.path !== 'stdout' && args.path !== 'stderr')
    throw new InvalidInputError('with execution_id, path is "stdout" or "stderr"');
  const slice = await readSavedSlice(
    services,
    currentPrincipal(),
    args.execution_id,
    args.path,
    args.offset ?? 0,
    args.length,
  );
  // The file is masked already (as the run's output went by): a slice could cut a secret in two.
  return {
    success: true,
    path: args.path,
    execution_id: args.execution_id,
    bytes: slice.bytes,
    encoding: args.encoding,
    content: args.encoding === 'base64' ? Buffer.from(slice.text).toString('base64') : slice.text,
    total_bytes: slice.total_bytes,
    offset: slice.offset,
    next_offset: slice.next_offset,
  };
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
function workspaceOf(services: Services, args: { session_id?: string; workspace?: 'command' }): Root {
  if ((args.session_id === undefined) === (args.workspace === undefined))
    throw new InvalidInputError('give exactly one of session_id or workspace');
  if (args.session_id !== undefined) return services.sessions.describe(args.session_id).dir;
  const workspace = commandWorkspace(services.config, currentPrincipal());
  mkdirSync(workspace, { recursive: true, mode: 0o700 }); // as execute_command makes it
  return realpathSync(workspace);
}

/** What approval and the audit show of a write: path, size, and the first lines when it is text. */
function writeSummary(path: string, data: Buffer): string {
  const head = data.subarray(0, SUMMARY_BYTES);
  const lines = head.includes(0)
    ? '(binary content)'
    : new TextDecoder().decode(head).split('\n').slice(0, SUMMARY_LINES).join('\n');
  return `write ${path} (${data.length} bytes)\n${lines}`;
}

const SUMMARY_BYTES = 4096;
const SUMMARY_LINES = 40;

function decodeBase64(content: string): Buffer {
  const compact = content.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1)
    throw new InvalidInputError('content is not valid base64');
  return Buffer.from(compact, 'base64');
}

/**
 * Writes `data` at `path` beneath `root` (util/beneath: no symlink followed, nothing outside the
 * workspace reached, whatever code does beside it). Missing parents are created; the bytes go to
 * a new file that is then renamed over the name, so an existing file is replaced, never written
 * through (a hard link or a file swapped in keeps its bytes). Everything made goes to the
 * workspace's owner: the sandbox uid of the session or run that has it lent, or the user whose
 * directory it is (a root-owned one stays root's until lent).
 */
export function writeConfined(root: Root, path: string, data: Buffer): Promise<void> {
  // A host directory's: its owner, as code there runs (never the directory's group); and only
  // where that owner may write.
  const as = actingAs(root);
  const owner = as ?? ownerOf(root);
  return inParentBeneath(
    root,
    path,
    async (dirFd, name) => {
      if (as) assertMay(fstatSync(dirFd), as, WRITE | SEARCH, path);
      // Only a regular file is replaced: a link, a FIFO or a directory there is refused, as before.
      const existing = await lstat(at(dirFd, name)).catch(() => undefined);
      if (existing && !existing.isFile())
        throw new ForbiddenPathError(`${quotedPath(path)} exists and is not a regular file`);
      const temp = `.codexec-write-${randomBytes(8).toString('hex')}`;
      const handle = await open(
        at(dirFd, temp),
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        0o644,
      );
      try {
        await handle.writeFile(data);
        if (owner) await handle.chown(owner.uid, owner.gid).catch(() => {});
      } finally {
        await handle.close();
      }
      await rename(at(dirFd, temp), at(dirFd, name)).catch(async (error: NodeJS.ErrnoException) => {
        await unlink(at(dirFd, temp)).catch(() => {});
        if (error.code === 'EISDIR' || error.code === 'ENOTEMPTY' || error.code === 'EEXIST')
          throw new ForbiddenPathError(`${quotedPath(path)} is a directory`);
        throw error;
      });
    },
    { create: true, owner },
  );
}

/**
 * Who new entries go to: the workspace's owner now (a lent workspace's is the sandbox uid), when
 * it is not root (and the server is). Asked of the directory itself, by descriptor.
 */
function ownerOf(root: Root): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const fd = openRoot(root);
  try {
    const stat = fstatSync(fd);
    return stat.uid !== 0 ? { uid: stat.uid, gid: stat.gid } : undefined;
  } finally {
    closeSync(fd);
  }
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
