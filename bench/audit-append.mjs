// The audit trail's cost per entry (`node bench/audit-append.mjs`, after `npm run build`): the
// time a run awaits for its entry, in a burst (entries back to back: the lock stays held) and
// spaced (one entry every 40 ms: each takes the lock again and the idle release follows), plus
// the CPU each spaced entry costs in all (lock, release and anchor included; the same loop without
// entries subtracted), on the disk of $TMPDIR. CODEXEC_DIST=/path/to/dist measures another build.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const dist = process.env.CODEXEC_DIST ?? new URL('../dist', import.meta.url).pathname;
const { AuditTrail } = await import(`${dist}/audit/index.js`);

const attempt = (n) => ({
  tool: 'execute_code',
  execution_id: `exec_${n.toString(16).padStart(12, '0')}`,
  session_id: null,
  runtime: 'python',
  input_code: `import math\nprint(math.sqrt(${n}))\n`.repeat(4),
  output_summary: `${Math.sqrt(n)}\n`,
  exit_code: 0,
  duration_ms: 21,
  approved: true,
  approved_by: 'auto',
  rule: null,
  principal: 'local',
  tool_calls: null,
});

const pct = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const ms = (value) => `${value.toFixed(3)} ms`;

const home = mkdtempSync(join(tmpdir(), 'codexec-bench-audit-'));
try {
  const trail = new AuditTrail({
    dir: join(home, 'logs'),
    keyFile: join(home, 'audit.key'),
    retentionDays: 365,
  });
  for (let n = 0; n < 200; n++) await trail.record(attempt(n)); // warm up (JIT, page cache)
  await sleep(200);

  const burst = [];
  for (let n = 0; n < 3000; n++) {
    const start = performance.now();
    await trail.record(attempt(n));
    burst.push(performance.now() - start);
  }
  await sleep(200);

  let idle = 0;
  for (let n = 0; n < 150; n++) {
    const used = process.cpuUsage();
    await sleep(40);
    const { user, system } = process.cpuUsage(used);
    idle += user + system;
  }
  const spaced = [];
  let cpu = 0;
  for (let n = 0; n < 150; n++) {
    const used = process.cpuUsage();
    const start = performance.now();
    await trail.record(attempt(n));
    spaced.push(performance.now() - start);
    await sleep(40); // the lock is let go after 20 ms idle
    const { user, system } = process.cpuUsage(used);
    cpu += user + system;
  }
  const mean = burst.reduce((a, b) => a + b) / burst.length;
  console.log(
    `burst  (n=${burst.length}): p50 ${ms(pct(burst, 50))}, p90 ${ms(pct(burst, 90))}, p99 ${ms(pct(burst, 99))}, mean ${ms(mean)}`,
  );
  console.log(`spaced (n=${spaced.length}): p50 ${ms(pct(spaced, 50))}, p99 ${ms(pct(spaced, 99))}`);
  console.log(`spaced CPU per entry, lock and anchor included: ${ms((cpu - idle) / 1000 / spaced.length)}`);
} finally {
  rmSync(home, { recursive: true, force: true });
}
