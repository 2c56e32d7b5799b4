// `codexec audit verify` (the real CLI) catches tampering with the trail's tail — an
// entry edited with its sha256 recomputed, the last entry deleted or cut in half, a day file
// gone, the anchor edited without the key — and passes an intact trail, a crash's leftovers and
// what retention removed. The trails are written by the real AuditTrail (src), in this process
// or in a child that is killed before it writes the anchor.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AuditTrail } from '../../src/audit/index.js';
import type { AuditAttempt } from '../../src/policy/index.js';
import { baseEnv, CLI, tempDir } from '../helpers/server.js';

const DAY_MS = 86_400_000;
const homes: string[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

const attempt = (n: number): AuditAttempt => ({
  tool: 'execute_code',
  execution_id: `exec_${n.toString(16).padStart(12, '0')}`,
  session_id: null,
  runtime: 'python',
  input_code: `print(${n})`,
  output_summary: `${n}\n`,
  exit_code: 0,
  duration_ms: 12,
  approved: true,
  approved_by: 'auto',
  rule: null,
  principal: 'local',
  tool_calls: null,
});

/** A home whose trail holds `perDay` entries a day for `days` days from 2026-11-20, anchored. */
async function trail(days = 1, perDay = 3, retentionDays = 365) {
  const home = tempDir('codexec-tamper-');
  homes.push(home);
  const logs = join(home, 'logs');
  let t = Date.parse('2026-11-20T10:00:00Z');
  const now = () => new Date(t);
  const writer = new AuditTrail({ dir: logs, keyFile: join(home, 'audit.key'), retentionDays, now });
  for (let day = 0; day < days; day++, t += DAY_MS - perDay * 1000) {
    for (let n = 1; n <= perDay; n++, t += 1000) await writer.record(attempt(day * 10 + n));
  }
  await writer.close(); // the anchor is written when the lock is let go
  const file = (day = days - 1) => join(logs, `audit-2026-11-${20 + day}.jsonl`);
  const lines = (day?: number) => readFileSync(file(day), 'utf8').trimEnd().split('\n');
  const write = (text: string[], day?: number) => writeFileSync(file(day), `${text.join('\n')}\n`);
  return { home, logs, file, lines, write };
}

function verify(home: string) {
  const out = spawnSync(process.execPath, [CLI, 'audit', 'verify'], { env: baseEnv(home), encoding: 'utf8' });
  return { code: out.status, stdout: out.stdout, stderr: out.stderr };
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The anchor's two JSON lines: the head (one space-padded page: the newest day) and the body. */
function readAnchor(logs: string) {
  const [head, body] = readFileSync(join(logs, 'audit-anchor.json'), 'utf8').split('\n');
  return { head: JSON.parse(head as string), body: JSON.parse(body as string) };
}

/** `line` with `change` applied and its hash recomputed (its hmac kept: the key is unknown). */
function rehash(line: string, change: (entry: Record<string, unknown>) => void): Record<string, unknown> {
  const { hash: _, hmac, ...body } = JSON.parse(line);
  change(body);
  return { ...body, hash: sha256(JSON.stringify(body)), hmac };
}

describe('codexec audit verify: tampering with the tail', () => {
  it('fails on the last entry edited with its sha256 recomputed, naming the line', async () => {
    const t = await trail();
    const lines = t.lines();
    const edited = rehash(lines[2] as string, (entry) => {
      entry.input_code = 'print("nothing to see")';
    });
    t.write([...lines.slice(0, 2), JSON.stringify(edited)]);
    const out = verify(t.home);
    expect(out.code).toBe(1);
    expect(out.stdout).toContain('audit-2026-11-20.jsonl:3: hmac does not match');
  });

  it('fails on an entry edited with the chain re-linked after it, naming the edited line', async () => {
    const t = await trail();
    const [first, second, third] = t.lines() as [string, string, string];
    const edited = rehash(second, (entry) => {
      entry.exit_code = 1;
    });
    const relinked = rehash(third, (entry) => {
      entry.prev_hash = edited.hash;
    });
    t.write([first, JSON.stringify(edited), JSON.stringify(relinked)]);
    const out = verify(t.home);
    expect(out.code).toBe(1);
    expect(out.stdout).toContain('audit-2026-11-20.jsonl:2: hmac does not match');
  });

  it('fails on a deleted last entry', async () => {
    const t = await trail();
    t.write(t.lines().slice(0, 2));
    const out = verify(t.home);
    expect(out.code).toBe(1);
    expect(out.stdout).toContain(
      'audit-2026-11-20.jsonl:3: audit-anchor.json records 3 entries for this day',
    );
  });

  it('fails on a last line cut in half', async () => {
    const t = await trail();
    const lines = t.lines();
    const last = lines[2] as string;
    writeFileSync(t.file(), `${lines.slice(0, 2).join('\n')}\n${last.slice(0, last.length / 2)}`);
    const out = verify(t.home);
    expect(out.code).toBe(1);
    expect(out.stdout).toContain('audit-2026-11-20.jsonl:3: audit-anchor.json records 3 entries');
  });

  it('fails on a missing day file the anchor names: the last day, or one before it', async () => {
    const t = await trail(3, 2);
    expect(verify(t.home)).toMatchObject({ code: 0 });
    const last = readFileSync(t.file(2));
    unlinkSync(t.file(2));
    const out = verify(t.home);
    expect(out.code).toBe(1);
    expect(out.stdout).toContain('audit-2026-11-22.jsonl: missing: audit-anchor.json records 2 entries');
    writeFileSync(t.file(2), last);
    unlinkSync(t.file(1));
    expect(verify(t.home).stdout).toContain('audit-2026-11-21.jsonl: missing');
  });

  it('fails on an anchor edited without the key, even to match a cut file', async () => {
    const t = await trail();
    const lines = t.lines();
    t.write(lines.slice(0, 2));
    const anchorPath = join(t.logs, 'audit-anchor.json');
    const { head, body } = readAnchor(t.logs);
    expect(head.day).toBe('2026-11-20');
    Object.assign(head.last, { count: 2, last_hash: JSON.parse(lines[1] as string).hash });
    writeFileSync(anchorPath, `${JSON.stringify(head).padEnd(4095)}\n${JSON.stringify(body)}\n`);
    const out = verify(t.home);
    expect(out.code).toBe(1);
    expect(out.stdout).toContain('audit-anchor.json:1: its HMAC does not match');
    // The days before the newest are covered too (through their sha256 in the signed head).
    const several = await trail(2, 1);
    const anchor = readAnchor(several.logs);
    expect(Object.keys(anchor.body.days)).toEqual(['2026-11-20']);
    anchor.body.days['2026-11-20'].count = 5;
    writeFileSync(
      join(several.logs, 'audit-anchor.json'),
      `${JSON.stringify(anchor.head).padEnd(4095)}\n${JSON.stringify(anchor.body)}\n`,
    );
    expect(verify(several.home).stdout).toContain(
      "audit-anchor.json: audit-anchor.json's days before the newest",
    );
    // Removed altogether: the key says the trail was signed, and the next writer leaves it so.
    unlinkSync(anchorPath);
    expect(verify(t.home).stdout).toContain('audit-anchor.json: missing, though the trail is signed');
    const writer = new AuditTrail({ dir: t.logs, keyFile: join(t.home, 'audit.key'), retentionDays: 365 });
    await writer.record(attempt(9));
    await writer.close();
    expect(verify(t.home).stdout).toContain('audit-anchor.json: missing, though the trail is signed');
  });

  it('fails on an entry stripped of its hmac after signed ones', async () => {
    const t = await trail();
    const lines = t.lines();
    const { hmac: _, ...stripped } = rehash(lines[2] as string, (entry) => {
      entry.approved = false;
    });
    t.write([...lines.slice(0, 2), JSON.stringify(stripped)]);
    expect(verify(t.home).stdout).toContain('audit-2026-11-20.jsonl:3: no hmac after signed entries');
  });
});

describe('codexec audit verify: intact trails', () => {
  it('passes an empty home, one just made, and a trail over several days', async () => {
    const empty = tempDir('codexec-tamper-');
    homes.push(empty);
    expect(verify(empty)).toMatchObject({ code: 0 });
    const one = await trail(1, 1);
    expect(verify(one.home)).toMatchObject({ code: 0 });
    expect(verify(one.home).stdout).toContain('audit chain intact: 1 entries in 1 files');
    const several = await trail(4, 3);
    const out = verify(several.home);
    expect(out).toMatchObject({ code: 0 });
    expect(out.stdout).toContain('audit chain intact: 12 entries in 4 files');
  });

  it('passes after retention removed old days (the anchor moved with them)', async () => {
    const t = await trail(6, 2);
    // A restarted server with a shorter retention prunes on its first entry.
    const writer = new AuditTrail({
      dir: t.logs,
      keyFile: join(t.home, 'audit.key'),
      retentionDays: 2,
      now: () => new Date('2026-11-25T12:00:00Z'),
    });
    await writer.record(attempt(99));
    await writer.close();
    const out = verify(t.home);
    expect(out).toMatchObject({ code: 0 });
    expect(out.stdout).toContain('audit chain intact: 7 entries in 3 files'); // the 23rd, 24th, 25th (3)
    const { head, body } = readAnchor(t.logs);
    expect([...Object.keys(body.days), head.day]).toEqual(['2026-11-23', '2026-11-24', '2026-11-25']);
    expect(body.removed_through).toBe('audit-2026-11-22.jsonl');
  });

  it('passes what a writer killed before writing the anchor leaves: entries past it, a torn last line', async () => {
    const t = await trail(1, 2);
    const module = resolve(import.meta.dirname, '../../dist/audit/index.js');
    const script = `
      const { AuditTrail } = await import(${JSON.stringify(module)});
      const [dir, keyFile] = process.argv.slice(1);
      const trail = new AuditTrail({ dir, keyFile, retentionDays: 365, now: () => new Date('2026-11-20T18:00:00Z') });
      for (const n of [3, 4]) await trail.record(${JSON.stringify(attempt(0))});
      process.kill(process.pid, 'SIGKILL');`;
    spawnSync(process.execPath, ['--input-type=module', '-e', script, t.logs, join(t.home, 'audit.key')]);
    expect(t.lines()).toHaveLength(4);
    appendFileSync(t.file(), '{"type":"code_execution","tool":"exe'); // and one killed mid-line
    const out = verify(t.home);
    expect(out).toMatchObject({ code: 0 });
    expect(out.stdout).toContain('audit chain intact: 4 entries');
    // Both past it, or the last one only: the writer anchors after 20 ms idle, which a busy machine
    // can put between its two records.
    expect(out.stdout).toMatch(/\b[12] entries past the anchor \(a writer's last burst\)/);
    expect(out.stdout).toContain('torn lines skipped (a writer died mid-line): audit-2026-11-20.jsonl:5');
    // The next writer counts them in; cutting one of them is then caught.
    const next = new AuditTrail({
      dir: t.logs,
      keyFile: join(t.home, 'audit.key'),
      retentionDays: 365,
      now: () => new Date('2026-11-20T19:00:00Z'),
    });
    await next.record(attempt(5));
    await next.close();
    expect(verify(t.home).stdout).not.toContain('past the anchor');
    const lines = t.lines();
    t.write([...lines.slice(0, 3), ...lines.slice(4)]);
    expect(verify(t.home)).toMatchObject({ code: 1 });
  });
});
