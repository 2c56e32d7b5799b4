// Imported by warm_node.mjs before it waits for its job, to compile ahead of time what every node
// run uses: the loader's path for a file module, the shim's builtins (src/runtimes/languages.ts)
// and console.log's formatting. It has no effect the program could see.
import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

createRequire(import.meta.url);
fileURLToPath(import.meta.url);
fileURLToPath(new URL('.', import.meta.url));
// biome-ignore lint/suspicious/noConsole: console.log's code, compiled ahead, writing to a sink
new console.Console(new Writable({ write: (_chunk, _encoding, done) => done() })).log('%s', 1, {});
