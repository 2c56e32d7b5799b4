// The cost of polling an MCP task (the target: under 2 ms p50), over stdio
// with the official client (2025-11-25 tasks, through the SDK's generic request), interleaved in
// one run with the floor: `ping`, a request that does no work at all. The task polled is a run
// still working (`sleep`), so each tasks/get reads its record, output so far included, from
// tasks.db. Usage: node bench/tasks.mjs [--n 500]
import { z } from 'zod';
import { interleave, ms, startServer } from './lib.mjs';

const n = Number(process.argv[process.argv.indexOf('--n') + 1] || 500);
const loose = z.looseObject({});

const server = await startServer();
const request = (method, params) => server.client.request({ method, params }, loose);
try {
  const created = await request('tools/call', {
    name: 'execute_code',
    arguments: { language: 'bash', code: 'echo working; sleep 600', timeout_ms: 600_000 },
    task: { ttl: 600_000 },
  });
  const taskId = created.task.taskId;
  const stats = await interleave(
    { 'tasks/get': () => request('tasks/get', { taskId }), ping: () => server.client.ping() },
    { n, warmup: 50 },
  );
  console.log(`MCP task polling over stdio: ${n} rounds, each request in turn (a task still working)`);
  console.log('| request | p50 (ms) | p90 (ms) | p99 (ms) | p50 − ping p50 (ms) |');
  console.log('|---|---|---|---|---|');
  for (const [name, { p50, p90, p99 }] of Object.entries(stats))
    console.log(`| ${name} | ${ms(p50)} | ${ms(p90)} | ${ms(p99)} | ${ms(p50 - stats.ping.p50)} |`);
  await request('tasks/cancel', { taskId });
} finally {
  await server.close();
}
