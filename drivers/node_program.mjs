// What a one-shot node or typescript program finds around it, whether a cold run loads this
// (node_globals.mjs, through node --import) or the warm driver does before the job:
// - `require`, `__filename` and `__dirname` as globals, the way most snippets use them in an ES
//   module, so the program's file holds the user's code alone and line and column are the user's;
// - stack traces without the frames of Node's own loader or of codexec's drivers, which say
//   nothing about the user's code.
import { createRequire } from 'node:module';
import { dirname } from 'node:path';

const DRIVERS = dirname(new URL(import.meta.url).pathname);

export function provideGlobals(script) {
  globalThis.require = createRequire(script);
  globalThis.__filename = script;
  globalThis.__dirname = dirname(script);
}

/** V8's own format ("Name: message" and an "at" line per frame), less the frames that are not the user's. */
Error.prepareStackTrace = (error, frames) => {
  const own = frames.filter((frame) => {
    const file = frame.getFileName() ?? '';
    return !file.startsWith('node:internal/') && !file.includes(DRIVERS);
  });
  return [headOf(error), ...own.map((frame) => `    at ${frame}`)].join('\n');
};

function headOf(error) {
  try {
    return Error.prototype.toString.call(error);
  } catch {
    return 'Error';
  }
}
