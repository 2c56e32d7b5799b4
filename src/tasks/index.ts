// Long work handed back as MCP tasks: the records (tasks.db, or the shared database's codexec_tasks)
// with status, output so far and result, and the runs behind them (cancel, shutdown). Knows nothing
// of MCP's wire shapes.

export { SqliteTaskStore } from './sqlite.js';
export {
  RESTARTED,
  TASK_STATUSES,
  type TaskEnd,
  type TaskRecord,
  type TaskStatus,
  type TaskStore,
} from './store.js';
export { type TaskRun, Tasks, type TasksOptions } from './tasks.js';
