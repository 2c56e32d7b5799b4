// Result shapes as zod schemas, each declared once: the tools' outputSchema and the types of the
// engine's, the sessions' and execute_command's results come from these (no layer below imports server).
export {
  artifactsOmitted,
  egressField,
  imageFields,
  limitKind,
  NAMES_HELP,
  outputSavedField,
  toolCallsField,
  waitingFields,
} from './fields.js';
export {
  commandResultSchema,
  executeCodeResultSchema,
  executionResultSchema,
  sendResultSchema,
} from './run.js';
export { closeResultSchema, sessionInfoSchema, startResultSchema } from './sessions.js';
