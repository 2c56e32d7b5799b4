// A small bash on the host that outlives the server by design: the server tells it what it uses
// (`+NAME` when a thing starts, `-NAME` when it is gone) on its stdin, and when that input ends —
// the server is gone, however it went — the script deals with everything still listed. Both
// reapers (subprocess mode's process groups, docker mode's containers) are one of these.
import { type ChildProcess, spawn } from 'node:child_process';
import { log } from '../../util/index.js';
import { findOnPath } from './system.js';

/** The part of a watcher's script that keeps the list: the associative array `names`. */
export const READ_NAMES = `declare -A names
while IFS= read -r line; do
  case $line in
    +*) names[\${line#+}]=1 ;;
    -*) unset "names[\${line#-}]" ;;
  esac
done`;

export interface WatcherOptions {
  /** Runs after READ_NAMES, with `args` as its positional parameters. */
  readonly script: string;
  readonly args?: readonly string[];
  /** What it is for, in the warnings when it cannot run. */
  readonly what: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Its own process group: a terminal's ^C to the server must not cut its work short. */
  readonly detached?: boolean;
}

export class Watcher {
  private helper: ChildProcess | undefined;
  private broken = false;

  constructor(private readonly options: WatcherOptions) {}

  watch(name: string | number): void {
    this.send(`+${name}`);
  }

  release(name: string | number): void {
    this.send(`-${name}`);
  }

  private send(line: string): void {
    this.start()?.stdin?.write(`${line}\n`);
  }

  private start(): ChildProcess | undefined {
    if (this.helper || this.broken) return this.helper;
    const { script, args = [], what, env = {}, detached = false } = this.options;
    const bash = findOnPath('bash');
    if (!bash) {
      this.broken = true;
      log('warn', `no bash for the ${what}: what it watches would outlive a server killed with SIGKILL`);
      return undefined;
    }
    const helper = spawn(
      bash,
      ['--norc', '--noprofile', '-c', `${READ_NAMES}\n${script}`, 'watcher', ...args],
      {
        cwd: '/',
        env,
        stdio: ['pipe', 'ignore', 'ignore'],
        detached,
      },
    );
    helper.once('error', (error) => {
      this.broken = true;
      this.helper = undefined;
      log('warn', `the ${what} could not start: ${error.message}`);
    });
    helper.stdin?.on('error', () => {});
    // Gone early (killed by someone): the next use starts another.
    helper.once('exit', () => {
      if (this.helper === helper) this.helper = undefined;
    });
    // It must not keep the server alive (`codexec run` exits after its run).
    helper.unref();
    (helper.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    this.helper = helper;
    return helper;
  }
}
