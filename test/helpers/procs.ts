// Host-side process checks that work whatever pid namespace the code ran in: look processes up
// by a unique marker in their command line instead of by the pid the code saw.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Host pids of live (non-zombie) processes whose argv contains `marker` as one argument. */
export function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (!argv.includes(marker)) continue;
      if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${entry}/stat`, 'utf8'))) continue;
      found.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return found;
}

/** A number of seconds unique to this test run, usable as `sleep <marker>`. */
export function sleepMarker(): string {
  return `${600 + Math.floor(Math.random() * 1000)}.${process.pid}${Math.floor(Math.random() * 1e6)}`;
}

/** Host pids of live processes started for `home`: a bwrap naming it, or anything running in it. */
export function processesUnder(home: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${entry}/stat`, 'utf8'))) continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const cwd = readlinkSafe(`/proc/${entry}/cwd`);
      if (argv.some((arg) => arg.startsWith(`${home}/`)) || cwd?.startsWith(`${home}/`))
        found.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return found;
}

function readlinkSafe(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}

/** Host pids of processes with `marker`, once at least one is there (or [] after `ms`). */
export async function appeared(marker: string, ms = 15_000): Promise<number[]> {
  const until = Date.now() + ms;
  let found = processesWith(marker);
  while (found.length === 0 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    found = processesWith(marker);
  }
  return found;
}
