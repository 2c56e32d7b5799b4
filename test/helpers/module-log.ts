// The module log (test/fixtures/module-log.mjs): a server started with logEnv()'s environment
// writes every module it loads (import and require) to the log, one URL or path per line.
// The bin runs a bundle (scripts/bundle.mjs): a file of dist/bundle stands for the sources it
// holds (dist/bundle/meta.json), each named as tsc builds it (src/a/b.ts as dist/a/b.js) or as it
// sits in node_modules, so a test names modules the same way for either build.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

export const MODULE_LOG_HOOK = resolve(import.meta.dirname, '../fixtures/module-log.mjs');
const ROOT = resolve(import.meta.dirname, '../..');
const BUNDLE = pathToFileURL(join(ROOT, 'dist/bundle/')).href;

/** The log's path in `dir`, and the environment that makes a server write it. */
export function logEnv(dir: string) {
  const path = join(dir, 'modules.log');
  return { path, env: { NODE_OPTIONS: `--import=${MODULE_LOG_HOOK}`, CODEXEC_TEST_MODULE_LOG: path } };
}

/** What the log holds: every module loaded so far, a bundle's file as the sources it holds. */
export function logged(path: string): string[] {
  const contents = bundleContents();
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .flatMap((url) => (url.startsWith(BUNDLE) ? (contents[url.slice(BUNDLE.length)] ?? [url]) : [url]));
}

let contents: Record<string, string[]> | undefined;

/** Each file of the bundle and the sources in it, as URLs of tsc's build and of node_modules. */
function bundleContents(): Record<string, string[]> {
  if (contents) return contents;
  const meta = JSON.parse(readFileSync(join(ROOT, 'dist/bundle/meta.json'), 'utf8')) as Record<
    string,
    string[]
  >;
  const built = (source: string) =>
    pathToFileURL(join(ROOT, source.replace(/^src\//, 'dist/').replace(/\.ts$/, '.js'))).href;
  contents = Object.fromEntries(Object.entries(meta).map(([file, sources]) => [file, sources.map(built)]));
  return contents;
}
