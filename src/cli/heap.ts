import { setFlagsFromString } from 'node:v8';

/**
 * A stdio server (one per MCP client, idle most of its life) keeps V8's young generation at its
 * initial size (1 MB semi-spaces) instead of letting it grow to 16 MB ones: measured 18 MB less
 * idle RSS after a run, and no slower run (bench/idle-rss.mjs, bench/ab.mjs). It must be set before
 * the young generation first grows, so before the program is loaded. `--max-semi-space-size` would
 * say the same but V8 reads it only at start-up (a bin cannot pass node flags portably:
 * `env -S` is missing from busybox); the growth factor is read at every scavenge. serve --http
 * (many users, busier) and the short-lived commands keep V8's default.
 */
export function sizeHeap(args: readonly string[]): void {
  const [command, ...rest] = args;
  if (command === 'serve' && !rest.includes('--http')) setFlagsFromString('--semi-space-growth-factor=1');
}
