import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../errors/index.js';

// CODEXEC_MCP_CONFIG: the downstream MCP servers, in the `mcpServers` format clients use. Their
// tools are named mcp__<server>__<tool>, so a server name may not contain "__".

/** The file's schema, made for each read (once, at start) and let go: no server holds it after. */
const schemas = () => {
  const name = z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_-]*$/, 'letters, digits, "-" and "_"')
    .refine(
      (value) => !value.includes('__'),
      'no "__" (it separates server and tool in mcp__<server>__<tool>)',
    );

  const stdioServer = z.object({
    type: z.literal('stdio').optional(),
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().min(1).optional(),
  });
  const httpServer = z.object({
    type: z.literal('http'),
    url: z.url(),
    headers: z.record(z.string(), z.string()).default({}),
  });

  const file = z.object({ mcpServers: z.record(name, z.union([httpServer, stdioServer])) });
  return { stdioServer, httpServer, file };
};

type Schemas = ReturnType<typeof schemas>;
export type DownstreamSpec = z.output<Schemas['stdioServer']> | z.output<Schemas['httpServer']>;

/** The servers of the file at `path`; a file that is missing or wrong stops start-up, naming it. */
export function loadMcpConfig(path: string): ReadonlyMap<string, DownstreamSpec> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`CODEXEC_MCP_CONFIG: cannot read ${path}: ${(error as Error).message}`);
  }
  const parsed = schemas().file.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(
      `CODEXEC_MCP_CONFIG: ${path}: ${issue?.path.join('.') || 'file'}: ${issue?.message}`,
    );
  }
  return new Map(Object.entries(parsed.data.mcpServers));
}
