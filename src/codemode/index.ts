// Code mode inside the sandbox: the channel from sandboxed code to the bridge.
export { type Channel, openChannel, SOCKET_NAME } from './channel.js';
export { CODE_MODE_DIR, CODE_MODE_FILES, channelEnv, codeModeArgv, NODE_IMPORT } from './helpers.js';
export {
  type AskModel,
  createSampler,
  type Sampler,
  type SamplingLimits,
  type SamplingUse,
  type ThinkRequest,
} from './sampler.js';
