// Subprocess mode's runs, and landlock runs without a cgroup, are plain process groups: a server
// killed with SIGKILL cannot end them.
// The reaper is a watcher (watcher.ts), started with the first run, that holds the groups in
// use (`+PGID` when one starts, `-PGID` when its leader has exited) and, when the server is gone,
// SIGKILLs every group still listed.
import { Watcher } from './watcher.js';

export function processGroupReaper(): Watcher {
  return new Watcher({
    script: `for group in "\${!names[@]}"; do kill -KILL -- "-$group" 2>/dev/null; done`,
    what: 'subprocess-mode reaper',
  });
}
