// Code mode's bridge to downstream MCP servers: sandboxed code calls their tools through it.
export { BREAKER_DEFAULTS, type BreakerOptions, CircuitBreaker } from './breaker.js';
export { McpBridge, type McpBridgeOptions, qualifiedName } from './bridge.js';
export { SchemaCache } from './cache.js';
export { type DownstreamSpec, loadMcpConfig } from './config.js';
export { BridgeError, type BridgeErrorCode } from './errors.js';
export { CallQueue, QUEUE_DEFAULTS, type QueueOptions } from './queue.js';
export { OTHER_TOOLS, toolCallFields } from './records.js';
export { allows, textOf } from './run.js';
export type {
  Bridge,
  BridgeRun,
  BridgeRunOptions,
  ServerHealth,
  ToolCallCount,
  ToolCallLog,
  ToolCallOutcome,
  ToolCallRecord,
  ToolInfo,
} from './types.js';
export { pythonModule, typescriptModule } from './wrappers.js';
