// The operator's mounts (CODEXEC_MOUNTS), held: each source is opened once, at start-up, and
// sandboxes bind that descriptor, never the path again, so a directory renamed or a symlink put
// in its place later lends nothing else.
import { closeSync, constants, openSync, readlinkSync, realpathSync } from 'node:fs';
import { type Config, type MountRule, mountsOf } from '../config/index.js';
import { ConfigError } from '../errors/index.js';
import type { SpecMount } from '../sandbox/index.js';
import { isWithin } from '../util/index.js';

interface Held {
  readonly rule: MountRule;
  readonly fd: number;
  /** The source's real path when opened. */
  readonly path: string;
}

export class HeldMounts {
  private readonly held: readonly Held[];

  /**
   * Open every mount's source: a source that is not a directory, that holds or lies in codexec's
   * own state (its home, where runs live: other principals' workspaces, the audit key), or that
   * lies where code may write (CODEXEC_ALLOWED_PATHS), stops start-up, named.
   */
  constructor(config: Pick<Config, 'mounts' | 'home' | 'runHome' | 'sandboxDir' | 'command'>) {
    const own = [config.home, config.runHome, config.sandboxDir].map(real);
    const roots = (config.command.allowedPaths ?? []).map(real);
    const held: Held[] = [];
    try {
      for (const [index, rule] of config.mounts.entries()) {
        const fd = openSource(rule.source, index);
        const path = readlinkSync(`/proc/self/fd/${fd}`);
        held.push({ rule, fd, path });
        const state = own.find((dir) => isWithin(dir, path) || isWithin(path, dir));
        if (state)
          throw new ConfigError(
            `CODEXEC_MOUNTS: ${index}.source: ${rule.source} ${isWithin(state, path) ? 'holds' : 'lies in'} codexec's own state (${state}); lend a directory outside it`,
          );
        // Code writes there (a working_dir): it could rename what is lent, or change it for others.
        const root = roots.find((dir) => isWithin(path, dir));
        if (root)
          throw new ConfigError(
            `CODEXEC_MOUNTS: ${index}.source: ${rule.source} lies in ${root}, where code may write (CODEXEC_ALLOWED_PATHS); lend a directory outside it`,
          );
      }
    } catch (error) {
      for (const { fd } of held) closeSync(fd);
      throw error;
    }
    this.held = held;
  }

  /** The mounts of `principal`'s runs and sessions, as a spec carries them. */
  of(principal: string): SpecMount[] {
    const rules = new Set(mountsOf(this.rules(), principal));
    return this.held
      .filter((held) => rules.has(held.rule))
      .map(({ fd, path, rule }) => ({ source: `/proc/${process.pid}/fd/${fd}`, path, target: rule.target }));
  }

  /** Whether two principals' runs see the same mounts (a warm process of one serves the other). */
  same(a: string, b: string): boolean {
    const [ofA, ofB] = [mountsOf(this.rules(), a), mountsOf(this.rules(), b)];
    return ofA.length === ofB.length && ofA.every((rule, index) => rule === ofB[index]);
  }

  /** What `health` shows `principal`: each of its mounts' directory and target. */
  list(principal: string): { source: string; target: string }[] {
    return this.of(principal).map(({ path, target }) => ({ source: path, target }));
  }

  close(): void {
    for (const { fd } of this.held) closeSync(fd);
  }

  private rules(): MountRule[] {
    return this.held.map((held) => held.rule);
  }
}

function openSource(source: string, index: number): number {
  try {
    return openSync(source, constants.O_RDONLY | constants.O_DIRECTORY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOTDIR' ? 'not a directory' : code === 'ENOENT' ? 'no such directory' : code;
    throw new ConfigError(`CODEXEC_MOUNTS: ${index}.source: cannot open ${source} (${why})`);
  }
}

/** A directory's real path, or the path itself where it does not exist yet. */
function real(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
