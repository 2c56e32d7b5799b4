// The synthetic execution-log corpus of the log-search benches: seed-format entries in daily
// JSONL files, deterministic (the same corpus on every run and in every bench that imports it).
import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';

// Deterministic pseudo-random numbers (mulberry32), so every run indexes the same corpus.
let seed = 42;
const rand = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (list) => list[Math.floor(rand() * list.length)];
const syllables = [
  'ka',
  'lo',
  'mi',
  'ner',
  'tos',
  'vra',
  'que',
  'dil',
  'sam',
  'por',
  'zen',
  'fu',
  'gri',
  'bel',
];
const word = () => Array.from({ length: 2 + Math.floor(rand() * 3) }, () => pick(syllables)).join('');
// 20,000 identifiers with a Zipf-like skew: a few are common, most are rare.
export const VOCAB = Array.from({ length: 20_000 }, word);
const ident = () => VOCAB[Math.floor(VOCAB.length * rand() ** 3)];

const PY = [
  () =>
    `import pandas as pd\ndf = pd.read_csv("${ident()}.csv")\nprint(df.${pick(['describe', 'head', 'info'])}())`,
  () => `import json\n${ident()} = json.load(open("${ident()}.json"))\nprint(len(${ident()}))`,
  () => `def ${ident()}(x):\n    return x * ${Math.floor(rand() * 100)}\nprint(${ident()}(3))`,
  () => `import requests\nr = requests.get("https://example.com/${ident()}")\nprint(r.status_code)`,
  () => `for i in range(${Math.floor(rand() * 1000)}):\n    ${ident()} = i ** 2\nprint("done")`,
];
const JS = [
  () => `const ${ident()} = [1, 2, 3].map((x) => x * 2);\nconsole.log(${ident()});`,
  () =>
    `import fs from 'node:fs';\nconst data = fs.readFileSync('${ident()}.txt', 'utf8');\nconsole.log(data.length);`,
  () => `const res = await fetch('https://example.com/${ident()}');\nconsole.log(res.status);`,
];
const SH = [() => `ls -la ${ident()}\necho done`, () => `grep -r "${ident()}" . | wc -l`, () => `sleep 100`];
const ERRORS = [
  () =>
    `Traceback (most recent call last):\n  File "script.py", line 1\nModuleNotFoundError: No module named '${ident()}'`,
  () => `Traceback (most recent call last):\nKeyError: '${ident()}'`,
  () => `ReferenceError: ${ident()} is not defined\n    at file:///script.mjs:1:1`,
  () => `ls: cannot access '${ident()}': No such file or directory`,
  () => `ZeroDivisionError: division by zero`,
];

function entry(i, at) {
  const language = pick(['python', 'python', 'python', 'node', 'typescript', 'bash']);
  const code = (language === 'bash' ? pick(SH) : language === 'python' ? pick(PY) : pick(JS))();
  const roll = rand();
  const status = roll < 0.8 ? 'success' : roll < 0.95 ? 'failed' : 'timeout';
  const session = rand() < 0.1 ? `sess_${(i % 5000).toString(16).padStart(12, '0')}` : null;
  return {
    type: 'execution',
    execution_id: `exec_${i.toString(16).padStart(12, '0')}`,
    session_id: session,
    language,
    code,
    stdin: null,
    stdout: status === 'success' ? `${ident()} ${Math.floor(rand() * 1e6)}\n` : '',
    stderr:
      status === 'failed' ? `${pick(ERRORS)()}\n` : status === 'timeout' ? '[codexec: timed out]\n' : '',
    exit_code: status === 'success' ? 0 : status === 'failed' ? 1 : null,
    timed_out: status === 'timeout',
    cancelled: false,
    duration_ms: Math.floor(rand() * 2000),
    memory_peak_mb: null,
    sandbox_mode: 'namespace',
    working_dir: `/home/u/.codexec/sandbox/exec_${i.toString(16).padStart(12, '0')}`,
    artifacts: { created: [], modified: [], deleted: [] },
    executed_at: at,
  };
}

/** Write `entries` seed-format entries into daily files in `dir`, spread over `days` days from 2026-01-01. */
export async function generate(dir, entries, days) {
  const ENTRIES = entries;
  const DAYS = days;
  mkdirSync(dir, { recursive: true });
  const start = Date.UTC(2026, 0, 1);
  const perDay = Math.ceil(ENTRIES / DAYS);
  let i = 0;
  for (let day = 0; day < DAYS && i < ENTRIES; day++) {
    const date = new Date(start + day * 86_400_000);
    const out = createWriteStream(join(dir, `executions-${date.toISOString().slice(0, 10)}.jsonl`));
    const lines = [];
    for (let k = 0; k < perDay && i < ENTRIES; k++, i++) {
      const at = new Date(date.getTime() + Math.floor((k / perDay) * 86_400_000)).toISOString();
      lines.push(JSON.stringify(entry(i, at)));
      if (lines.length === 2000) {
        if (!out.write(`${lines.join('\n')}\n`)) await new Promise((r) => out.once('drain', r));
        lines.length = 0;
      }
    }
    if (lines.length > 0) out.write(`${lines.join('\n')}\n`);
    await new Promise((resolve, reject) => out.end((error) => (error ? reject(error) : resolve())));
  }
}
