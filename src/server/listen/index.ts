// 2026-era listens for tasks: subscriptions/listen naming `taskIds`, acknowledged for the caller's
// own tasks, then notifications/tasks on the listen's stream (stdio and HTTP) as their status changes.

export { TaskFeed } from './feed.js';
export { HttpTaskListens } from './http.js';
export { MAX_TASK_IDS, MAX_TASK_LISTENS } from './request.js';
export { TaskListenTransport } from './stdio.js';
