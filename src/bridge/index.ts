// Code mode's bridge to downstream MCP servers (DESIGN §8 "Code mode").
export { allows, McpBridge, qualifiedName, textOf } from './bridge.js';
export { type DownstreamSpec, loadMcpConfig } from './config.js';
export { BridgeError, type BridgeErrorCode } from './errors.js';
export type {
  Bridge,
  BridgeRun,
  BridgeRunOptions,
  ServerHealth,
  ToolCallOutcome,
  ToolCallRecord,
  ToolInfo,
} from './types.js';
