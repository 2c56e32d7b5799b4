// read_file: a file of a session's workspace, of execute_command's or of an ended run, or a slice
// of a run's kept output. Read-only: always registered.
import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { CodexecError, InvalidInputError } from '../../errors/index.js';
import { EXECUTION_ID } from '../../outputs/index.js';
import {
  currentPrincipal,
  type HeldDir,
  pathOf,
  quotedPath,
  type Root,
  shownName,
} from '../../util/index.js';
import { defineTool } from '../define-tool.js';
import { locateRunFile } from '../run-files.js';
import { DEFAULT_SLICE_BYTES, readSavedSlice } from '../saved-output.js';
import type { Services } from '../services.js';
import { maskedText, readConfined, target, workspaceOf } from '../workspace-files.js';

const readInput = () =>
  z.object({
    ...target,
    path: z.string().min(1).max(4096).describe('relative to the workspace, without ".."'),
    encoding: z.enum(['utf8', 'base64']).default('utf8'),
    execution_id: z
      .string()
      .regex(EXECUTION_ID, 'expected exec_ + 12 hex, from a result')
      .optional()
      .describe("a run's id: its files, or its whole stdout or stderr"),
    offset: z.number().int().min(0).optional().describe('stdout or stderr of a run: the byte to start at'),
    length: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(`stdout or stderr of a run: bytes to read (default ${DEFAULT_SLICE_BYTES})`),
  });

const readOutput = () =>
  z.object({
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

export function registerReadFile(server: McpServer, services: Services): void {
  const limit = services.config.maxFileTransferBytes;
  defineTool(server, {
    name: 'read_file',
    title: "Read a file from a workspace or a run's, or a run's saved output",
    description:
      "Read a file from a session's working directory (session_id), execute_command's workspace " +
      '(workspace: "command") or a run\'s (execution_id); base64 for a file that is not UTF-8 text. With ' +
      "execution_id and path stdout or stderr: a slice of a truncated run's whole output, in bytes.",
    schemas: () => ({
      input: readInput(),
      output: readOutput(),
    }),
    text: { plain: ['content'] },
    annotations: { readOnlyHint: true, openWorldHint: false },
    handler: async (args) => {
      const { execution_id } = args;
      if (execution_id === undefined || (args.path !== 'stdout' && args.path !== 'stderr'))
        return readFileOf(services, args, limit);
      // A run's stdout or stderr: its kept output, else a file of that name it left, else the
      // refusal that says no output was kept.
      const kept = await savedStream(services, execution_id, args.path);
      if (kept || args.offset !== undefined || args.length !== undefined)
        return readSaved(services, { ...args, execution_id });
      const file = await readFileOf(services, args, limit).catch((error) => {
        if (error instanceof CodexecError && error.code === 'NOT_FOUND') return undefined;
        throw error;
      });
      return file ?? readSaved(services, { ...args, execution_id });
    },
  });
}

/** A file of a workspace or of an ended run, whole (up to `limit`), as text or base64. */
async function readFileOf(services: Services, args: z.output<ReturnType<typeof readInput>>, limit: number) {
  if (args.offset !== undefined || args.length !== undefined)
    throw new InvalidInputError(
      "offset and length page a run's saved stdout or stderr; a file is read whole",
    );
  // "stdout/" is no way around the reserved names: a path that ends as a directory's reads nothing.
  if (/[/\\]\.?$/.test(args.path))
    throw new InvalidInputError(`${quotedPath(args.path)} names a directory; read_file reads a file`);
  const place = await placeOf(services, args);
  let data: Buffer;
  try {
    data = await readConfined(place.root, place.path, limit);
  } finally {
    place.opened?.close();
  }
  const root = place.root;
  // Secrets are masked in text, whichever encoding carries it (base64 is no way around the
  // filter); bytes that are not UTF-8 go out as they are (see maskedText).
  const text = maskedText(data, services.secrets);
  let content: string;
  if (args.encoding === 'base64')
    content = text === undefined ? data.toString('base64') : Buffer.from(text).toString('base64');
  else if (text === undefined)
    throw new InvalidInputError(`${quotedPath(args.path)} is not UTF-8 text; read it with encoding "base64"`);
  else content = text;
  return {
    success: true as const,
    path: shownName(args.path),
    bytes: data.length,
    encoding: args.encoding,
    content,
    working_dir: pathOf(root),
  };
}

/**
 * Whether read_file {execution_id, path} names the run's kept output: path "stdout" or "stderr",
 * and output kept (else a file of that name in the run's directory, as its resource reads it).
 * Kept output is in the caller's own folder, so another principal's id finds none here, and the
 * reads after this one ask the execution log, refusing it as an unknown id.
 */
function savedStream(services: Services, executionId: string, path: 'stdout' | 'stderr') {
  return services.outputs.has(currentPrincipal(), executionId, path);
}

/** Where read_file reads: a workspace (session_id, workspace), or an ended run's directory. */
async function placeOf(
  services: Services,
  args: { session_id?: string; workspace?: 'command'; execution_id?: string; path: string },
): Promise<{ readonly root: Root; readonly path: string; readonly opened?: HeldDir }> {
  if (args.execution_id === undefined) return { root: workspaceOf(services, args), path: args.path };
  if (args.session_id !== undefined || args.workspace !== undefined)
    throw new InvalidInputError('give execution_id or a workspace (session_id, workspace), not both');
  return locateRunFile(services, args.execution_id, args.path, currentPrincipal());
}

/** read_file {execution_id, path: "stdout"|"stderr", offset, length}: a slice of saved output. */
async function readSaved(
  services: Services,
  args: z.output<ReturnType<typeof readInput>> & { execution_id: string },
): Promise<z.input<ReturnType<typeof readOutput>>> {
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
