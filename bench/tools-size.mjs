#!/usr/bin/env node
// What a model pays to use codexec, in bytes: tools/list under the default settings (read at the
// start of every conversation), and the text of a few results (a success, a failure, a truncated
// run, a refusal) beside the size of their structured content. --base adds another build's
// dist/cli.js, measured the same way, and the ratio this ÷ base.
// Usage: npm run build && node bench/tools-size.mjs [--base /path/to/dist/cli.js]
import { resolve } from 'node:path';
import { CLI, startServer } from './lib.mjs';

const at = process.argv.indexOf('--base');
const base = at === -1 ? undefined : resolve(process.argv[at + 1]);

const CALLS = [
  ['success', 'execute_code', { language: 'python', code: 'print(1)' }],
  [
    'failure',
    'execute_code',
    { language: 'python', code: 'import json\nprint("loading")\njson.loads("{bad")' },
  ],
  ['truncated', 'execute_code', { language: 'python', code: 'for i in range(200_000): print(i)' }],
  ['refusal', 'send_to_session', { session_id: 'sess_nope', code: 'x' }],
];

async function sizes(cli) {
  const server = await startServer({ CODEXEC_SANDBOX_MODE: 'namespace' }, { cli });
  try {
    const row = { 'tools/list': Buffer.byteLength(JSON.stringify(await server.client.listTools())) };
    for (const [label, name, args] of CALLS) {
      const result = await server.client.callTool({ name, arguments: args });
      row[`${label} text`] = Buffer.byteLength(result.content[0]?.text ?? '');
      row[`${label} structured`] = Buffer.byteLength(JSON.stringify(result.structuredContent));
    }
    return row;
  } finally {
    await server.close();
  }
}

const mine = await sizes(CLI);
const theirs = base ? await sizes(base) : undefined;
console.log(`bytes${theirs ? ' (this | base | this ÷ base)' : ''}`);
for (const [key, value] of Object.entries(mine)) {
  const other = theirs?.[key];
  const compared = other === undefined ? '' : ` | ${other} | ${(value / other).toFixed(2)}`;
  console.log(`${key.padEnd(22)} ${value}${compared}`);
}
