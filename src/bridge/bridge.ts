import type { Client } from '@modelcontextprotocol/client';
import { fromJsonSchema, type StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import { log } from '../util/index.js';
import { type BreakerOptions, CircuitBreaker } from './breaker.js';
import { SchemaCache } from './cache.js';
import type { DownstreamSpec } from './config.js';
import { BridgeError } from './errors.js';
import { CallQueue, type QueueOptions } from './queue.js';
import { Run, type RunHost } from './run.js';
import type {
  Bridge,
  BridgeRun,
  BridgeRunOptions,
  ServerHealth,
  ToolCallOutcome,
  ToolInfo,
} from './types.js';

const CONNECT_TIMEOUT_MS = 30_000;

interface Downstream {
  readonly name: string;
  readonly spec: DownstreamSpec;
  readonly breaker: CircuitBreaker;
  client?: Promise<Client> | undefined;
  tools?: ToolInfo[] | undefined;
  /** Why it could not be reached or listed, last time it could not (until it can again). */
  error?: string | undefined;
  /** The last failure of any kind (a call's too): the cause an open circuit's refusal names. */
  lastFailure?: string | undefined;
}

/** `mcp__<server>__<tool>` ↔ its parts. */
export function qualifiedName(server: string, tool: string): string {
  return `mcp__${server}__${tool}`;
}

export interface McpBridgeOptions {
  readonly rateLimitPerMinute: number;
  /** CODEXEC_MAX_TOOL_CALL_RECORDS: calls a run's result records in full; the rest are counted. */
  readonly maxToolCallRecords?: number | undefined;
  /** The on-disk tool cache (cache.ts); none: tools are listed once per process. */
  readonly cacheFile?: string | undefined;
  readonly breaker?: BreakerOptions | undefined;
  readonly queue?: QueueOptions | undefined;
}

/**
 * The bridge to the downstream MCP servers: one SDK client per server, connected on first use,
 * shared by every run, connected again on the next use after it died, closed with the server.
 * Tool lists come from the first listing, or from the disk cache (fresh, or stale when the server
 * cannot be reached). Each server has its circuit breaker.
 */
export class McpBridge implements Bridge, RunHost {
  private readonly servers: Map<string, Downstream>;
  /** A validator per tool, made from its listed input schema on its first call. */
  private readonly validators = new Map<string, StandardSchemaWithJSON<unknown, unknown>>();
  private readonly cache: SchemaCache | undefined;
  private readonly queue: CallQueue;

  constructor(
    specs: ReadonlyMap<string, DownstreamSpec>,
    private readonly options: McpBridgeOptions,
  ) {
    this.servers = new Map(
      [...specs].map(([name, spec]) => [name, { name, spec, breaker: new CircuitBreaker(options.breaker) }]),
    );
    this.cache = options.cacheFile ? new SchemaCache(options.cacheFile) : undefined;
    this.queue = new CallQueue(options.queue);
  }

  get configured(): boolean {
    return this.servers.size > 0;
  }

  openRun(options: BridgeRunOptions): BridgeRun {
    return new Run(this, options, this.options.rateLimitPerMinute, this.options.maxToolCallRecords ?? 100);
  }

  health(): ServerHealth[] {
    return [...this.servers.values()].map((server) => ({
      name: server.name,
      transport: server.spec.type === 'http' ? 'http' : 'stdio',
      connected: server.client !== undefined && server.error === undefined,
      circuit: server.breaker.state,
      tools: server.tools?.length ?? null,
      ...(server.error && { error: server.error }),
    }));
  }

  async close(): Promise<void> {
    const clients = [...this.servers.values()].map((server) => server.client);
    for (const server of this.servers.values()) server.client = undefined;
    await Promise.allSettled(clients.map(async (client) => (await client)?.close()));
  }

  /** Every tool of every server; a server that cannot be reached is left out (and said on stderr). */
  async tools(): Promise<ToolInfo[]> {
    const lists = await Promise.all(
      [...this.servers.values()].map((server) =>
        this.toolsOf(server).catch((error: Error) => {
          // Said once per failure: a loop of calls to a server whose circuit is open says nothing.
          if (!error.message.startsWith('circuit open'))
            log('warn', `code mode: ${server.name}: ${error.message}`);
          return [];
        }),
      ),
    );
    return lists.flat();
  }

  async call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolCallOutcome> {
    const tool = await this.schema(name);
    await this.validate(tool, args);
    const server = this.servers.get(tool.server) as Downstream;
    return this.queue.run(name, signal, () => this.callOn(server, tool, args, signal));
  }

  /**
   * The tool named `name`. Not listed: a server that could not be listed is named with its
   * circuit's state and the cause (its tools are unknown, not absent); else TOOL_NOT_FOUND.
   */
  async schema(name: string): Promise<ToolInfo> {
    const tool = (await this.tools()).find((info) => info.name === name);
    if (tool) return tool;
    const server = [...this.servers.values()].find(
      (candidate) => !candidate.tools && name.startsWith(qualifiedName(candidate.name, '')),
    );
    if (server?.error !== undefined) throw this.unavailable(server, server.error);
    throw new BridgeError('TOOL_NOT_FOUND', `no tool ${name}; discoverMCPTools() lists them`);
  }

  /**
   * `server "x" is unavailable (circuit …): cause`; CIRCUIT_OPEN (refused without trying) by
   * default while the circuit is open, else DOWNSTREAM_UNAVAILABLE.
   */
  private unavailable(
    server: Downstream,
    cause: string,
    code: 'CIRCUIT_OPEN' | 'DOWNSTREAM_UNAVAILABLE' = server.breaker.state === 'open'
      ? 'CIRCUIT_OPEN'
      : 'DOWNSTREAM_UNAVAILABLE',
  ): BridgeError {
    const { breaker } = server;
    const state =
      breaker.state === 'open'
        ? `circuit open, retry in ${breaker.retryInSeconds()} s`
        : breaker.state === 'half-open'
          ? 'circuit half-open: the next call tries it'
          : `circuit closed, ${breaker.failureCount} of ${breaker.threshold} failures in a row before it opens`;
    return new BridgeError(code, `server "${server.name}" is unavailable (${state}): ${cause}`);
  }

  private async callOn(
    server: Downstream,
    tool: ToolInfo,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ToolCallOutcome> {
    const { name } = tool;
    this.admit(server, name);
    let client: Client;
    try {
      client = await this.client(server);
    } catch (error) {
      server.breaker.failed();
      throw this.unavailable(server, (error as Error).message, 'DOWNSTREAM_UNAVAILABLE');
    }
    try {
      const result = await client.callTool({ name: tool.tool, arguments: args }, { signal });
      server.breaker.succeeded();
      return {
        content: (result.content ?? []) as unknown[],
        ...(result.structuredContent !== undefined && {
          structuredContent: result.structuredContent as Record<string, unknown>,
        }),
        ...(result.isError === true && { isError: true }),
      };
    } catch (error) {
      if (signal.aborted) throw new BridgeError('CALL_ABORTED', `${name}: the run ended before the call did`);
      server.breaker.failed();
      server.lastFailure = (error as Error).message;
      throw new BridgeError('DOWNSTREAM_ERROR', `${name}: ${(error as Error).message}`);
    }
  }

  private admit(server: Downstream, name: string): void {
    if (server.breaker.admit()) return;
    throw this.unavailable(
      server,
      `${name}: ${server.lastFailure ?? 'it failed repeatedly'}`,
      'CIRCUIT_OPEN',
    );
  }

  /** Arguments the code sends are checked against the tool's schema here, before any server sees them. */
  private async validate(tool: ToolInfo, args: Record<string, unknown>): Promise<void> {
    let validator = this.validators.get(tool.name);
    if (!validator) {
      validator = fromJsonSchema(tool.inputSchema as never);
      this.validators.set(tool.name, validator);
    }
    const checked = await validator['~standard'].validate(args);
    if (checked.issues) {
      const issues = checked.issues.map((issue) => issue.message).join('; ');
      throw new BridgeError(
        'INVALID_ARGUMENTS',
        `${tool.name}: the arguments do not match its input schema: ${issues}`,
      );
    }
  }

  private async toolsOf(server: Downstream): Promise<ToolInfo[]> {
    if (server.tools) return server.tools;
    const cached = this.cache?.get(server.name, server.spec);
    if (cached?.fresh) {
      server.tools = cached.tools;
      return server.tools;
    }
    let listed: Awaited<ReturnType<Client['listTools']>>;
    try {
      if (!server.breaker.admit()) throw new Error(`circuit open for ${server.breaker.retryInSeconds()} s`);
      listed = await (await this.client(server)).listTools();
      server.breaker.succeeded();
      server.error = undefined;
    } catch (error) {
      if (!(error as Error).message.startsWith('circuit open')) {
        server.breaker.failed();
        server.error = (error as Error).message;
        server.lastFailure = server.error;
      }
      if (!cached) throw error;
      log('warn', `code mode: ${server.name}: ${(error as Error).message}; its tools as listed before`);
      return cached.tools; // stale, not kept: the next discovery tries the server again
    }
    server.tools = listed.tools.map((tool) => ({
      name: qualifiedName(server.name, tool.name),
      server: server.name,
      tool: tool.name,
      description: tool.description ?? '',
      inputSchema: tool.inputSchema as Record<string, unknown>,
      ...(tool.outputSchema && { outputSchema: tool.outputSchema as Record<string, unknown> }),
    }));
    this.cache?.set(server.name, server.spec, server.tools);
    return server.tools;
  }

  private client(server: Downstream): Promise<Client> {
    server.client ??= this.connect(server).then(
      (client) => {
        server.error = undefined;
        return client;
      },
      (error: Error) => {
        server.client = undefined; // try again on the next use
        server.error = error.message;
        server.lastFailure = error.message;
        throw error; // its callers count the failure, then say so (unavailable)
      },
    );
    return server.client;
  }

  private async connect(server: Downstream): Promise<Client> {
    const { spec } = server;
    // The client SDK is loaded by the first connection: a server with no downstream (most) never
    // loads it (idle memory).
    const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const { getDefaultEnvironment, StdioClientTransport } = await import(
      '@modelcontextprotocol/client/stdio'
    );
    const transport =
      spec.type === 'http'
        ? new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers } })
        : new StdioClientTransport({
            command: spec.command,
            args: spec.args,
            // What an MCP client passes on by default, plus the file's own: never the server's secrets.
            env: { ...getDefaultEnvironment(), ...spec.env },
            ...(spec.cwd && { cwd: spec.cwd }),
            stderr: 'ignore',
          });
    const client = new Client({ name: 'codexec-bridge', version: '1.0.0' });
    // A server that dies is connected again on the next use.
    transport.onclose = () => {
      server.client = undefined;
    };
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        client.connect(transport),
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${CONNECT_TIMEOUT_MS / 1000} s`)),
            CONNECT_TIMEOUT_MS,
          );
        }),
      ]);
    } catch (error) {
      await client.close().catch(() => {});
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return client;
  }
}
