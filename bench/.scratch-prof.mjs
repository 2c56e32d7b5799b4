import { measure, startServer } from './lib.mjs';

const server = await startServer({ CODEXEC_SANDBOX_MODE: 'namespace' });
const codes = { python: 'print(1)', node: 'console.log(1)', bash: 'echo 1' };
const langs = ['python', 'node', 'bash'];
let i = 0;
const task = async () => {
  const l = langs[i++ % 3];
  const r = await server.call('execute_code', { language: l, code: codes[l] });
  if (r.stdout !== '1\n') throw new Error(JSON.stringify(r));
};
await measure(task, { n: 100, concurrency: 8 });
const m = await measure(task, { n: 900, concurrency: 8 });
console.log('done', m.wallMs ?? '');
await server.close();
