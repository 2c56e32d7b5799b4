import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { fromJsonSchema, type StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import { log } from '../util/index.js';
import { type BreakerOptions, CircuitBreaker } from './breaker.js';
import { SchemaCache } from './cache.js';
import type { DownstreamSpec } from './config.js';
import { BridgeError } from './errors.js';
import { CallQueue, type QueueOptions } from './queue.js';
import type {
  Bridge,
  BridgeRun,
  BridgeRunOptions,
  ServerHealth,
  ToolCallOutcome,
  ToolCallRecord,
  ToolInfo,
} from './types.js';

const CONNECT_TIMEOUT_MS = 30_000;

interface Downstream {
  readonly name: string;
  readonly spec: DownstreamSpec;
  readonly breaker: CircuitBreaker;
  client?: Promise<Client> | undefined;
  tools?: ToolInfo[] | undefined;
  error?: string | undefined;
}

/** `mcp__<server>__<tool>` ↔ its parts. */
export function qualifiedName(server: string, tool: string): string {
  return `mcp__${server}__${tool}`;
}

/** allowed_tools entries are names with `*` wildcards (any characters, none too). */
export function allows(patterns: readonly string[], name: string): boolean {
  return patterns.some((pattern) => {
    const regex = pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*');
    return new RegExp(`^${regex}$`).test(name);
  });
}

export interface McpBridgeOptions {
  readonly rateLimitPerMinute: number;
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
export class McpBridge implements Bridge {
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
    return new Run(this, options, this.options.rateLimitPerMinute);
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
          log('warn', `code mode: ${server.name}: ${error.message}`);
          return [];
        }),
      ),
    );
    return lists.flat();
  }

  async call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolCallOutcome> {
    const tool = (await this.tools()).find((info) => info.name === name);
    if (!tool) throw new BridgeError('TOOL_NOT_FOUND', `no tool ${name}; discoverMCPTools() lists them`);
    await this.validate(tool, args);
    const server = this.servers.get(tool.server) as Downstream;
    return this.queue.run(name, signal, () => this.callOn(server, tool, args, signal));
  }

  private async callOn(
    server: Downstream,
    tool: ToolInfo,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ToolCallOutcome> {
    const { name } = tool;
    this.admit(server, name);
    try {
      const client = await this.client(server);
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
      if (error instanceof BridgeError) throw error;
      throw new BridgeError('DOWNSTREAM_ERROR', `${name}: ${(error as Error).message}`);
    }
  }

  private admit(server: Downstream, name: string): void {
    if (server.breaker.admit()) return;
    throw new BridgeError(
      'CIRCUIT_OPEN',
      `${name}: server ${server.name} failed repeatedly; calls to it are refused for ` +
        `${server.breaker.retryInSeconds()} s more (circuit open)`,
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
    } catch (error) {
      if (!(error as Error).message.startsWith('circuit open')) server.breaker.failed();
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
        throw new BridgeError('DOWNSTREAM_UNAVAILABLE', `server ${server.name}: ${error.message}`);
      },
    );
    return server.client;
  }

  private async connect(server: Downstream): Promise<Client> {
    const { spec } = server;
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

/** One run's view: its allowlist, its rate limit, the record of its calls. */
class Run implements BridgeRun {
  private readonly made: ToolCallRecord[] = [];
  private readonly recent: number[] = [];

  constructor(
    private readonly bridge: McpBridge,
    private readonly options: BridgeRunOptions,
    private readonly perMinute: number,
  ) {}

  async call(name: string, args: Record<string, unknown>): Promise<ToolCallOutcome> {
    const started = Date.now();
    try {
      if (!allows(this.options.allowedTools, name)) {
        throw new BridgeError(
          'TOOL_NOT_ALLOWED',
          `tool ${name} is not allowed for this run (allowed_tools: ${JSON.stringify(this.options.allowedTools)})`,
        );
      }
      while (this.recent.length > 0 && (this.recent[0] as number) <= started - 60_000) this.recent.shift();
      if (this.recent.length >= this.perMinute) {
        throw new BridgeError(
          'RATE_LIMITED',
          `${name}: this run made ${this.perMinute} calls within a minute, the limit (CODEXEC_BRIDGE_RATE_LIMIT)`,
        );
      }
      this.recent.push(started);
      const outcome = await this.bridge.call(name, args, this.options.signal);
      this.made.push({
        tool: name,
        success: outcome.isError !== true,
        duration_ms: Date.now() - started,
        ...(outcome.isError === true && { error: textOf(outcome).slice(0, 500) }),
      });
      return outcome;
    } catch (error) {
      this.made.push({
        tool: name,
        success: false,
        duration_ms: Date.now() - started,
        error: (error as Error).message,
      });
      throw error;
    }
  }

  async discover(search?: string): Promise<ToolInfo[]> {
    const tools = await this.bridge.tools();
    if (!search) return tools;
    const terms = search.toLowerCase().split(/\s+/).filter(Boolean);
    return tools.filter((tool) =>
      terms.every((term) => `${tool.name} ${tool.description}`.toLowerCase().includes(term)),
    );
  }

  async search(query: string, limit = 10): Promise<ToolInfo[]> {
    const terms = query.toLowerCase().split(/\s+/).filter(Boolean);
    const scored = (await this.bridge.tools())
      .map((tool) => {
        const name = tool.name.toLowerCase();
        const description = tool.description.toLowerCase();
        let score = 0;
        for (const term of terms) {
          if (tool.tool.toLowerCase() === term) score += 10;
          else if (name.includes(term)) score += 5;
          if (description.includes(term)) score += 1;
        }
        return { tool, score };
      })
      .filter((entry) => entry.score > 0);
    scored.sort((a, b) => b.score - a.score || a.tool.name.localeCompare(b.tool.name));
    return scored.slice(0, Math.max(1, limit)).map((entry) => entry.tool);
  }

  async schema(name: string): Promise<ToolInfo> {
    const tool = (await this.bridge.tools()).find((info) => info.name === name);
    if (!tool) throw new BridgeError('TOOL_NOT_FOUND', `no tool ${name}; discoverMCPTools() lists them`);
    return tool;
  }

  calls(): ToolCallRecord[] {
    return [...this.made];
  }
}

/** The text items of an outcome, joined. */
export function textOf(outcome: ToolCallOutcome): string {
  return outcome.content
    .map((item) =>
      (item as { type?: string; text?: string }).type === 'text' ? (item as { text: string }).text : '',
    )
    .join('\n');
}
