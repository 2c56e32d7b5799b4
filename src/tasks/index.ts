// Long work handed back as MCP tasks: the records in $CODEXEC_HOME/tasks.db (status, output so far,
// result) and the runs behind them (cancel, shutdown). Knows nothing of MCP's wire shapes.

export { RESTARTED, TASK_STATUSES, type TaskRecord, type TaskStatus, TaskStore } from './store.js';
export { type TaskRun, Tasks, type TasksOptions } from './tasks.js';
