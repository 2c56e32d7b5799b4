export type {
  Bridge,
  BridgeRun,
  BridgeRunOptions,
  ServerHealth,
  ToolCallOutcome,
  ToolCallRecord,
  ToolInfo,
} from './types.js';
