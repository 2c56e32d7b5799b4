// write_file / read_file: move files into and out of a session's workspace or execute_command's
// persistent workspace (read_file: read-file.ts, an ended run's files too). Writing a file is not
// running code, but it changes what code will see, so write_file exists only when
// CODEXEC_ENABLED is on; read_file is read-only and always there.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync } from 'node:fs';
import { lstat, open, rename, unlink } from 'node:fs/promises';
import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { ForbiddenPathError, InvalidInputError } from '../../errors/index.js';
import {
  actingAs,
  assertMay,
  at,
  inParentBeneath,
  openRoot,
  pathOf,
  quotedPath,
  type Root,
  SEARCH,
  shownName,
  WRITE,
} from '../../util/index.js';
import { defineTool } from '../define-tool.js';
import type { Gatekeeper } from '../guard.js';
import { COMMAND_WORKSPACE, placeShown } from '../place.js';
import type { Services } from '../services.js';
import { FileTooLargeError, target, workspaceOf } from '../workspace-files.js';
import { registerReadFile } from './read-file.js';

const writeInput = () =>
  z.object({
    ...target,
    content: z.string(),
    encoding: z.enum(['utf8', 'base64']).default('utf8'),
  });
const writeOutput = () =>
  z.object({
    success: z.boolean(),
    path: z.string(),
    bytes: z.number(),
    working_dir: z.string(),
  });
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
    schemas: () => ({
      input: writeInput(),
      output: writeOutput(),
    }),
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
          // A session's place the gate finds; else execute_command's workspace.
          ...(args.session_id === undefined && {
            place: placeShown(root, COMMAND_WORKSPACE),
          }),
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
