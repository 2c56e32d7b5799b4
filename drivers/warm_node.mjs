// Warm-pool driver: a pre-started Node that waits for one ES module, imports it as the main
// program, and exits when it is done. Used once, then discarded: no state outlives the run.
// Protocol on fd 3: the script path and its arguments, NUL-separated, then end of file.
import { closeSync, readSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const chunks = [];
const buffer = Buffer.alloc(65536);
for (;;) {
  let n;
  try {
    n = readSync(3, buffer, 0, buffer.length, null);
  } catch (error) {
    if (error.code === 'EAGAIN') continue;
    throw error;
  }
  if (n === 0) break;
  chunks.push(Buffer.from(buffer.subarray(0, n)));
}
closeSync(3);
const data = Buffer.concat(chunks);
if (data.length === 0) process.exit(0);
const [script, ...args] = data.toString('utf8').split('\0');
process.argv = [process.argv[0], script, ...args];
await import(pathToFileURL(script).href);
