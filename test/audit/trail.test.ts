import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AuditTrail, verifyAudit } from '../../src/audit/index.js';
import type { AuditAttempt } from '../../src/policy/index.js';
import { baseEnv, CLI, tempDir } from '../helpers/server.js';

const DAY_MS = 86_400_000;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
/** A log directory (made by the first entry) in a home of its own, where the audit key goes. */
const newDir = () => {
  const home = tempDir('codexec-audit-');
  dirs.push(home);
  return join(home, 'logs');
};
const keyOf = (dir: string) => join(dirname(dir), 'audit.key');
const verify = (dir: string) => verifyAudit(dir, keyOf(dir));

const attempt = (n: number, overrides: Partial<AuditAttempt> = {}): AuditAttempt => ({
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
  ...overrides,
});

const lines = (dir: string, file: string) => readFileSync(join(dir, file), 'utf8').trimEnd().split('\n');

/** A clock that advances by `stepMs` per call from `start`. */
function clock(start: number, stepMs = 1000) {
  let t = start;
  return () => {
    const now = new Date(t);
    t += stepMs;
    return now;
  };
}

describe('audit trail', () => {
  it('writes one chained entry per attempt, refused ones too, that verify accepts', async () => {
    const dir = newDir();
    const trail = new AuditTrail({
      dir,
      keyFile: keyOf(dir),
      retentionDays: 365,
      now: clock(Date.parse('2026-11-23T10:00:00Z')),
    });
    await trail.record(attempt(1));
    await trail.record(
      attempt(2, {
        execution_id: null,
        approved: false,
        approved_by: null,
        rule: 'rm_rf_root',
        output_summary: '',
        exit_code: null,
        duration_ms: null,
      }),
    );
    await trail.record(attempt(3, { tool: 'send_to_session', session_id: 'sess_1', approved_by: 'client' }));
    const [first, second, third] = lines(dir, 'audit-2026-11-23.jsonl').map((line) => JSON.parse(line));
    expect(first).toMatchObject({
      type: 'code_execution',
      tool: 'execute_code',
      runtime: 'python',
      input_code: 'print(1)',
      approved: true,
      approved_by: 'auto',
      prev_hash: '0'.repeat(64),
      at: '2026-11-23T10:00:00.000Z',
    });
    expect(second).toMatchObject({ approved: false, rule: 'rm_rf_root', prev_hash: first.hash });
    expect(third).toMatchObject({ session_id: 'sess_1', approved_by: 'client', prev_hash: second.hash });
    expect(statSync(join(dir, 'audit-2026-11-23.jsonl')).mode & 0o777).toBe(0o600);
    expect(verify(dir)).toMatchObject({ ok: true, entries: 3, files: 1, last_hash: third.hash });
  });

  it('names the principal, and still verifies entries written before entries named one or were signed', async () => {
    const dir = newDir();
    const trail = new AuditTrail({
      dir,
      keyFile: keyOf(dir),
      retentionDays: 365,
      now: clock(Date.parse('2026-11-23T10:00:00Z')),
    });
    await trail.record(attempt(1, { principal: 'alice' }));
    await trail.record(attempt(2));
    const file = 'audit-2026-11-23.jsonl';
    const [first, second] = lines(dir, file).map((line) => JSON.parse(line));
    expect([first.principal, second.principal]).toEqual(['alice', 'local']);
    // The same two entries as an older server wrote them: no principal, tool_calls or hmac, in a
    // trail of its own (no key, no anchor yet).
    const sha = (text: string) => createHash('sha256').update(text).digest('hex');
    let prev = '0'.repeat(64);
    const older = [first, second].map(({ principal: _, tool_calls: ___, hash: __, hmac: ____, ...body }) => {
      const unhashed = { ...body, prev_hash: prev };
      prev = sha(JSON.stringify(unhashed));
      return JSON.stringify({ ...unhashed, hash: prev });
    });
    const legacyDir = newDir();
    mkdirSync(legacyDir);
    writeFileSync(join(legacyDir, file), `${older.join('\n')}\n`);
    expect(verify(legacyDir)).toMatchObject({ ok: true, entries: 2, unsigned: 2 });
    const upgraded = new AuditTrail({
      dir: legacyDir,
      keyFile: keyOf(legacyDir),
      retentionDays: 365,
      now: clock(Date.parse('2026-11-23T11:00:00Z')),
    });
    await upgraded.record(attempt(3, { principal: 'bob' }));
    await upgraded.close();
    expect(verify(legacyDir)).toMatchObject({ ok: true, entries: 3, unsigned: 2, past_anchor: 0 });
    // Taking the principal out of a newer entry breaks its hash.
    const third = lines(legacyDir, file)[2] as string;
    writeFileSync(join(legacyDir, file), `${older.join('\n')}\n${third.replace('"principal":"bob",', '')}\n`);
    expect(verify(legacyDir)).toMatchObject({ ok: false, bad: { file, line: 3 } });
  });

  it('keeps a summary of output and a hash of long input', async () => {
    const dir = newDir();
    const trail = new AuditTrail({ dir, keyFile: keyOf(dir), retentionDays: 365 });
    const code = 'x'.repeat(150_000);
    await trail.record(attempt(1, { input_code: code, output_summary: 'y'.repeat(2000) }));
    const [file] = readdirSync(dir).filter((name) => /^audit-\d/.test(name));
    const [entry] = lines(dir, file as string).map((line) => JSON.parse(line));
    expect(entry.input_code).toHaveLength(100_000);
    expect(entry.input_truncated).toBe(true);
    expect(entry.input_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(entry.output_summary).toHaveLength(500);
    expect(verify(dir).ok).toBe(true);
  });

  it('detects an altered, a removed and a reordered entry, naming the line', async () => {
    const dir = newDir();
    const trail = new AuditTrail({
      dir,
      keyFile: keyOf(dir),
      retentionDays: 365,
      now: clock(Date.parse('2026-11-23T10:00:00Z')),
    });
    for (let n = 1; n <= 5; n++) await trail.record(attempt(n));
    const file = 'audit-2026-11-23.jsonl';
    const original = lines(dir, file);
    const write = (entries: string[]) => writeFileSync(join(dir, file), `${entries.join('\n')}\n`);

    write(original.map((line, i) => (i === 2 ? line.replace('"approved":true', '"approved":false') : line)));
    expect(verify(dir)).toMatchObject({ ok: false, bad: { file, line: 3 } });
    expect(verify(dir).bad?.reason).toContain('hash does not match');

    write(original.filter((_, i) => i !== 1));
    expect(verify(dir)).toMatchObject({ ok: false, bad: { file, line: 2 } });

    write([original[0], original[2], original[1], original[3], original[4]] as string[]);
    expect(verify(dir)).toMatchObject({ ok: false, bad: { file, line: 2 } });

    // A valid entry replaced by garbage in the middle is not passed off as a torn line.
    write(original.map((line, i) => (i === 1 ? '{"half an entry' : line)));
    expect(verify(dir)).toMatchObject({ ok: false, bad: { file, line: 3 } });

    write(original);
    expect(verify(dir).ok).toBe(true);
  });

  it('chains across days: a file starts from the previous file last hash', async () => {
    const dir = newDir();
    const trail = new AuditTrail({
      dir,
      keyFile: keyOf(dir),
      retentionDays: 365,
      now: clock(Date.parse('2026-11-20T23:59:58Z'), DAY_MS / 2),
    });
    for (let n = 1; n <= 5; n++) await trail.record(attempt(n));
    const files = readdirSync(dir)
      .filter((name) => /^audit-\d/.test(name))
      .sort();
    expect(files).toEqual(['audit-2026-11-20.jsonl', 'audit-2026-11-21.jsonl', 'audit-2026-11-22.jsonl']);
    const lastOfFirst = JSON.parse(lines(dir, 'audit-2026-11-20.jsonl').at(-1) as string);
    const firstOfSecond = JSON.parse(lines(dir, 'audit-2026-11-21.jsonl')[0] as string);
    expect(firstOfSecond.prev_hash).toBe(lastOfFirst.hash);
    expect(verify(dir)).toMatchObject({ ok: true, entries: 5, files: 3 });

    // A new trail (a restarted server) picks the chain up from the files.
    await new AuditTrail({
      dir,
      keyFile: keyOf(dir),
      retentionDays: 365,
      now: () => new Date('2026-11-23T08:00:00Z'),
    }).record(attempt(6));
    expect(verify(dir)).toMatchObject({ ok: true, entries: 6, files: 4 });
  });

  it('removes files past retention and keeps the rest verifiable through the anchor', async () => {
    const dir = newDir();
    const start = Date.parse('2026-01-01T12:00:00Z');
    const old = new AuditTrail({ dir, keyFile: keyOf(dir), retentionDays: 365, now: clock(start, DAY_MS) });
    for (let n = 1; n <= 6; n++) await old.record(attempt(n)); // Jan 1 … Jan 6, one a day
    expect(verify(dir)).toMatchObject({ ok: true, files: 6 });
    const lastOfJan2 = JSON.parse(lines(dir, 'audit-2026-01-02.jsonl').at(-1) as string).hash;

    const later = new AuditTrail({
      dir,
      keyFile: keyOf(dir),
      retentionDays: 3,
      now: () => new Date('2026-01-06T18:00:00Z'),
    });
    await later.record(attempt(7));
    const files = readdirSync(dir)
      .filter((name) => name.startsWith('audit-2026'))
      .sort();
    expect(files).toEqual([
      'audit-2026-01-03.jsonl',
      'audit-2026-01-04.jsonl',
      'audit-2026-01-05.jsonl',
      'audit-2026-01-06.jsonl',
    ]);
    const report = verify(dir);
    expect(report).toMatchObject({ ok: true, entries: 5, start_hash: lastOfJan2 });

    writeFileSync(
      join(dir, 'audit-anchor.json'),
      JSON.stringify({ removed_through: 'audit-2026-01-02.jsonl', last_hash: 'f'.repeat(64) }),
    );
    // An unsigned anchor (as retention wrote before anchors were signed) beside a signed trail.
    expect(verify(dir)).toMatchObject({ ok: false, bad: { file: 'audit-anchor.json', line: 0 } });
  });

  it('continues after a line torn by a crash, and verify says where it was', async () => {
    const dir = newDir();
    const now = () => new Date('2026-11-23T10:00:00Z');
    await new AuditTrail({ dir, keyFile: keyOf(dir), retentionDays: 365, now }).record(attempt(1));
    const file = 'audit-2026-11-23.jsonl';
    appendFileSync(join(dir, file), '{"type":"code_execution","tool":"exec'); // killed mid-write
    await new AuditTrail({ dir, keyFile: keyOf(dir), retentionDays: 365, now }).record(attempt(2));
    const report = verify(dir);
    expect(report).toMatchObject({ ok: true, entries: 2, torn: [{ file, line: 2 }] });
    expect(lines(dir, file)).toHaveLength(3);
  });

  it('keeps one chain when several processes append to the same directory at once', async () => {
    const dir = newDir();
    const module = resolve(import.meta.dirname, '../../dist/audit/index.js');
    const script = `
      const { AuditTrail } = await import(${JSON.stringify(module)});
      const trail = new AuditTrail({ dir: process.argv[1], keyFile: process.argv[1] + '/../audit.key', retentionDays: 365 });
      while (Date.now() < Number(process.argv[2])); // start together, so the appends overlap
      await Promise.all(Array.from({ length: 300 }, (_, n) => trail.record({
        tool: 'execute_code', execution_id: null, session_id: null, runtime: 'bash',
        input_code: 'echo ' + process.pid + ' ' + n, output_summary: '', exit_code: 0,
        duration_ms: 1, approved: true, approved_by: 'auto', rule: null, principal: 'local', tool_calls: null })));`;
    const startAt = String(Date.now() + 1500);
    const children = [1, 2, 3].map(
      () =>
        new Promise<number | null>((done) => {
          const child = spawn(process.execPath, ['--input-type=module', '-e', script, dir, startAt], {
            stdio: 'inherit',
          });
          child.on('exit', done);
        }),
    );
    expect(await Promise.all(children)).toEqual([0, 0, 0]);
    expect(verify(dir)).toMatchObject({ ok: true, entries: 900 });
  });

  it('keeps its lock file between appends in quick succession and lets it go when idle or at exit', async () => {
    const dir = newDir();
    const trail = new AuditTrail({ dir, keyFile: keyOf(dir), retentionDays: 365 });
    await trail.record(attempt(1));
    expect(readdirSync(dir)).toContain('audit.lock'); // held: the next entry need not take it again
    await trail.record(attempt(2));
    await expect.poll(() => readdirSync(dir).includes('audit.lock'), { timeout: 1000 }).toBe(false);
    // A process that exits right after its last entry leaves no lock behind.
    const module = resolve(import.meta.dirname, '../../dist/audit/index.js');
    const script = `
      const { AuditTrail } = await import(${JSON.stringify(module)});
      await new AuditTrail({ dir: process.argv[1], keyFile: process.argv[1] + '/../audit.key', retentionDays: 365 }).record(${JSON.stringify(attempt(3))});`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script, dir], {
      stdio: 'inherit',
    });
    expect(child.status).toBe(0);
    expect(readdirSync(dir)).not.toContain('audit.lock');
    expect(verify(dir)).toMatchObject({ ok: true, entries: 3 });
  });

  it('codexec audit verify exits 0 on an intact chain and 1 naming the first bad line', async () => {
    const logDir = newDir();
    const home = dirname(logDir);
    const trail = new AuditTrail({
      dir: logDir,
      keyFile: keyOf(logDir),
      retentionDays: 365,
      now: () => new Date('2026-11-23T10:00:00Z'),
    });
    for (let n = 1; n <= 3; n++) await trail.record(attempt(n));
    const verifyCli = () =>
      spawnSync(process.execPath, [CLI, 'audit', 'verify'], { env: baseEnv(home), encoding: 'utf8' });
    const intact = verifyCli();
    expect(intact.status).toBe(0);
    expect(intact.stdout).toContain('audit chain intact: 3 entries');
    const file = join(logDir, 'audit-2026-11-23.jsonl');
    writeFileSync(file, readFileSync(file, 'utf8').replace('print(2)', 'print(22)'));
    const broken = verifyCli();
    expect(broken.status).toBe(1);
    expect(broken.stdout).toContain('audit-2026-11-23.jsonl:2');
  });
});
