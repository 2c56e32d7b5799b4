import { extname } from 'node:path';
import {
  type ContentBlock,
  type McpServer,
  ProtocolError,
  ProtocolErrorCode,
  type ReadResourceResult,
  ResourceNotFoundError,
  ResourceTemplate,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { commandWorkspace } from '../config/index.js';
import { CodexecError } from '../errors/index.js';
import { type OutputSaved, SAVED_STREAMS } from '../outputs/index.js';
import { type HeldDir, type Root, unshownName } from '../util/index.js';
import { principalOf } from './connection.js';
import { imageContent } from './images.js';
import { locateRunFile } from './run-files.js';
import { readSavedWhole } from './saved-output.js';
import type { Services } from './services.js';
import { maskedText, readConfined } from './workspace-files.js';

// Files in codexec's workspaces as MCP resources. Each result's
// artifacts come back as resource_link blocks; resources/read serves them and any other file of
// those workspaces, confined exactly as read_file (one function: tools/files.ts readConfined):
//   codexec://exec/<execution_id>/<path>   the working directory of that run, send or command
//   codexec://session/<session_id>/<path>  a live session's working directory
//   codexec://workspace/<path>             execute_command's persistent workspace
//   codexec://exec/<execution_id>/stdout   a truncated run's saved output, whole (saved-output.ts);
//                                          a file of that name is read when none is kept
// Runs are found through the execution log (and so only by the principal that made them).

/** At most this many resource links per result (the JSON lists every artifact). */
export const MAX_LINKS = 20;

const MIME_TYPES: Readonly<Record<string, string>> = {
  '.txt': 'text/plain',
  '.log': 'text/plain',
  '.md': 'text/markdown',
  '.csv': 'text/csv',
  '.tsv': 'text/tab-separated-values',
  '.json': 'application/json',
  '.xml': 'application/xml',
  '.yaml': 'application/yaml',
  '.yml': 'application/yaml',
  '.html': 'text/html',
  '.py': 'text/x-python',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.ts': 'text/typescript',
  '.sh': 'text/x-shellscript',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.svg': 'image/svg+xml',
  '.pdf': 'application/pdf',
  '.zip': 'application/zip',
  '.xlsx': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};

function mimeTypeOf(path: string): string | undefined {
  return MIME_TYPES[extname(path).toLowerCase()];
}

/** `codexec://<kind>/<id segments…>/<path segments…>`, each segment percent-encoded. */
export function resourceUri(
  kind: 'exec' | 'session' | 'workspace',
  parts: readonly string[],
  path: string,
): string {
  const segments = [...parts, ...path.split('/').filter((segment) => segment !== '')];
  return `codexec://${kind}/${segments.map(encodeURIComponent).join('/')}`;
}

/**
 * The resource_link blocks of a result: one per artifact (files created or modified, relative to
 * its working directory), the first MAX_LINKS of them. The artifacts are names as shown (escaped,
 * secrets masked: engine/listing.ts): the link's name is that; its URI percent-encodes the name it
 * stands for (control characters included), masks kept. A name that is not UTF-8 gets no link: no
 * codexec:// URI reads it back.
 */
export function artifactLinks(value: {
  readonly execution_id?: string | undefined;
  readonly artifacts?: readonly string[] | undefined;
  readonly output_saved?: OutputSaved | undefined;
}): ContentBlock[] {
  const id = value.execution_id;
  if (!id) return [];
  const links: ContentBlock[] = [];
  for (const shown of (value.artifacts ?? []).slice(0, MAX_LINKS)) {
    const path = unshownName(shown);
    if (path === undefined) continue;
    let uri: string;
    try {
      uri = resourceUri('exec', [id], path);
    } catch {
      continue; // a lone surrogate: no UTF-8 to percent-encode
    }
    const mimeType = mimeTypeOf(path);
    links.push({ type: 'resource_link' as const, uri, name: shown, ...(mimeType && { mimeType }) });
  }
  return [...links, ...savedLinks(value.output_saved)];
}

/** A link to each stream a truncated result kept whole (output_saved). */
function savedLinks(saved: OutputSaved | undefined): ContentBlock[] {
  if (!saved) return [];
  return SAVED_STREAMS.flatMap((stream) => {
    const kept = saved[stream];
    if (!kept) return [];
    const name = `${stream} (${kept.partial ? 'its start' : 'whole'}, ${kept.bytes} bytes)`;
    return [
      { type: 'resource_link' as const, uri: kept.uri, name, mimeType: 'text/plain', size: kept.bytes },
    ];
  });
}

/** What follows a run's JSON: its pictures, then links to its files. */
export function runContent(
  value: Parameters<typeof imageContent>[0] & Parameters<typeof artifactLinks>[0],
): ContentBlock[] {
  return [...imageContent(value), ...artifactLinks(value)];
}

/** Register `resources/read` for codexec:// URIs (the resources capability comes with it). */
export function registerResources(server: McpServer, services: Services): void {
  // First: the SDK reads through the first template that matches. Both read through readResource.
  server.registerResource(
    'saved-output',
    new ResourceTemplate('codexec://exec/{execution_id}/{stream}', { list: undefined }),
    {
      title: "A run's whole stdout or stderr",
      description:
        'codexec://exec/<execution_id>/stdout (or /stderr): the output a truncated result left out (its output_saved), ' +
        'whole, up to CODEXEC_MAX_FILE_TRANSFER_BYTES; larger: page it with read_file {execution_id, path, offset}.',
      mimeType: 'text/plain',
    },
    (uri, _variables, ctx) => readResource(services, uri, ctx),
  );
  server.registerResource(
    'workspace-file',
    new ResourceTemplate('codexec://{kind}/{+path}', { list: undefined }),
    {
      title: 'A file in a codexec workspace',
      description:
        "codexec://exec/<execution_id>/<path> (a run's working directory), codexec://session/<session_id>/<path>, " +
        "codexec://workspace/<path> (execute_command's workspace). Text for UTF-8 files, else a base64 blob.",
    },
    (uri, _variables, ctx) => readResource(services, uri, ctx),
  );
}

async function readResource(services: Services, uri: URL, ctx: ServerContext): Promise<ReadResourceResult> {
  try {
    const saved = await savedOutputOf(services, uri, principalOf(ctx));
    if (saved !== undefined) return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: saved }] };
    const { root, path, opened } = await locate(services, uri, principalOf(ctx));
    let data: Buffer;
    try {
      data = await readConfined(root, path, services.config.maxFileTransferBytes);
    } finally {
      opened?.close();
    }
    const mimeType = mimeTypeOf(path);
    const base = { uri: uri.href, ...(mimeType && { mimeType }) };
    // Text is masked like run output (secrets filter); not UTF-8: a blob, as it is (files.ts).
    const text = maskedText(data, services.secrets);
    return {
      contents: [text === undefined ? { ...base, blob: data.toString('base64') } : { ...base, text }],
    };
  } catch (error) {
    throw asProtocolError(uri, error);
  }
}

/**
 * codexec://exec/<id>/stdout|stderr of a run that kept that output (outputs/): the whole of it.
 * Undefined for any other URI, and where nothing was kept: then the name is a file of the run's
 * working directory, as before (a file named `stdout` there is shadowed only while output is kept).
 */
async function savedOutputOf(services: Services, uri: URL, principal: string): Promise<string | undefined> {
  if (uri.protocol !== 'codexec:' || uri.host !== 'exec') return undefined;
  const [id, stream, ...more] = uri.pathname.split('/').filter((segment) => segment !== '');
  if (id === undefined || more.length > 0 || (stream !== 'stdout' && stream !== 'stderr')) return undefined;
  if (!(await services.outputs.has(principal, id, stream))) return undefined;
  return readSavedWhole(services, principal, id, stream);
}

/**
 * The directory and the relative path a codexec:// URI names: a live session's, held since it
 * started; an ended run's own workspace (codexec's: no code is left there to move it); the
 * command workspace, walked from its root name by name (later commands may have changed it); an
 * ended run's host directory, opened again by the same rules as a new working_dir (allowed root, no
 * symlink on the way, its owner) for this one read; or the command workspace.
 */
async function locate(
  services: Services,
  uri: URL,
  principal: string,
): Promise<{ readonly root: Root; readonly path: string; readonly opened?: HeldDir }> {
  if (uri.protocol !== 'codexec:') throw new ResourceNotFoundError(uri.href, 'not a codexec:// URI');
  let segments: string[];
  try {
    segments = uri.pathname
      .split('/')
      .filter((segment) => segment !== '')
      .map(decodeURIComponent);
  } catch {
    throw new ResourceNotFoundError(uri.href, `${uri.href}: malformed percent-encoding`);
  }
  const rest = (skip: number) => {
    const path = segments.slice(skip).join('/');
    if (path === '') throw new ResourceNotFoundError(uri.href, `${uri.href} names no file`);
    return path;
  };
  switch (uri.host) {
    case 'exec':
      return locateRunFile(services, segments[0] ?? '', rest(1), principal);
    case 'session': {
      const id = segments[0] ?? '';
      return { root: services.sessions.describe(id).dir, path: rest(1) };
    }
    case 'workspace':
      return { root: commandWorkspace(services.config, principal), path: rest(0) };
    default:
      throw new ResourceNotFoundError(
        uri.href,
        `${uri.href}: codexec:// URIs name exec/<execution_id>/…, session/<session_id>/… or workspace/…`,
      );
  }
}

/** resources/read answers in JSON-RPC errors: a file that is not there (or not reachable) is "not found". */
function asProtocolError(uri: URL, error: unknown): Error {
  if (error instanceof ProtocolError) return error;
  if (error instanceof CodexecError) {
    if (error.code === 'LIMIT_REACHED')
      return new ProtocolError(ProtocolErrorCode.InvalidParams, error.message);
    return new ResourceNotFoundError(uri.href, `${uri.href}: ${error.message}`);
  }
  if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
    return new ResourceNotFoundError(uri.href, `${uri.href}: its workspace is gone`);
  }
  return error as Error;
}
