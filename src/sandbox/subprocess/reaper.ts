// Subprocess mode's runs are plain process groups: a server killed with SIGKILL cannot end them.
// The reaper is a small bash on the host, started with the first run, that reads the groups in use
// on its stdin (`+PGID` when one starts, `-PGID` when its leader has exited) and, when that input
// ends — the server is gone, however it went — SIGKILLs every group still listed.
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { log } from '../../util/index.js';

const SCRIPT = `declare -A groups
while IFS= read -r line; do
  case $line in
    +*) groups[\${line#+}]=1 ;;
    -*) unset "groups[\${line#-}]" ;;
  esac
done
for group in "\${!groups[@]}"; do kill -KILL -- "-$group" 2>/dev/null; done`;

const BASH = ['/bin/bash', '/usr/bin/bash'];

export class Reaper {
  private helper: ChildProcess | undefined;
  private broken = false;

  /** The group led by `pgid` is in use: killed if the server dies before `release(pgid)`. */
  watch(pgid: number): void {
    this.send(`+${pgid}`);
  }

  /** Its leader has exited: a pid (and group id) the kernel may give to another process later. */
  release(pgid: number): void {
    this.send(`-${pgid}`);
  }

  private send(line: string): void {
    const helper = this.start();
    helper?.stdin?.write(`${line}\n`);
  }

  private start(): ChildProcess | undefined {
    if (this.helper || this.broken) return this.helper;
    const bash = BASH.find(executable);
    if (!bash) {
      this.broken = true;
      log('warn', 'no bash to reap subprocess-mode runs: they would outlive a server killed with SIGKILL');
      return undefined;
    }
    const helper = spawn(bash, ['--norc', '--noprofile', '-c', SCRIPT], {
      cwd: '/',
      env: {},
      stdio: ['pipe', 'ignore', 'inherit'],
    });
    helper.once('error', (error) => {
      this.broken = true;
      this.helper = undefined;
      log('warn', `the subprocess-mode reaper could not start: ${error.message}`);
    });
    helper.stdin?.on('error', () => {});
    // Gone early (killed by someone): the next run starts another.
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

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
