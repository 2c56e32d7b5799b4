// The operator's mounts (CODEXEC_MOUNTS), held: each source is opened once, at start-up, and
// sandboxes bind that descriptor, never the path again, so a directory renamed or a symlink put
// in its place later lends nothing else.
import { closeSync, constants, openSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
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
   * own state (its home, where runs live: other principals' workspaces, the audit key) or where
   * code may write (CODEXEC_ALLOWED_PATHS), or (docker mode) has a mount beneath it, and a target
   * over any of those, stops start-up, named.
   */
  constructor(config: MountConfig) {
    const own = ownState(config).map(real);
    const roots = (config.command.allowedPaths ?? []).map(real);
    const submounts = config.sandboxMode === 'docker' ? mountPoints() : [];
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
        // Where code writes (a working_dir beneath CODEXEC_ALLOWED_PATHS: a directory of an
        // ordinary user's), it could rename what is lent, or change it for another principal.
        const writable = roots.map((root) => userDirOnTheWay(root, path)).find(Boolean);
        if (writable)
          throw new ConfigError(
            `CODEXEC_MOUNTS: ${index}.source: ${rule.source} ${writable === path ? 'is' : 'lies in'} ${writable}, a user's directory where code may work (CODEXEC_ALLOWED_PATHS); lend one only root can change`,
          );
        // A container engine's read-only bind leaves what is mounted beneath it writable.
        const beneath = submounts.find((point) => point !== path && isWithin(point, path));
        if (beneath)
          throw new ConfigError(
            `CODEXEC_MOUNTS: ${index}.source: ${rule.source} has ${beneath} mounted beneath it, which a container engine would lend writable; lend the directories on either side instead`,
          );
        // A target over the paths runs work in (workspaces, host directories) would hide them.
        const hidden = [
          ...own.filter((dir) => isWithin(rule.target, dir)),
          ...[...own, ...roots].filter((dir) => isWithin(dir, rule.target)),
        ][0];
        if (hidden)
          throw new ConfigError(
            `CODEXEC_MOUNTS: ${index}.target: ${rule.target} would cover ${hidden}, where runs work; choose another target`,
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

type MountConfig = Pick<
  Config,
  | 'mounts'
  | 'home'
  | 'runHome'
  | 'sandboxDir'
  | 'envsDir'
  | 'logDir'
  | 'scriptsDir'
  | 'command'
  | 'sandboxMode'
>;

/** codexec's own directories: its home, where runs live, workspaces, environments, logs, scripts. */
function ownState(config: MountConfig): string[] {
  const { home, runHome, sandboxDir, envsDir, logDir, scriptsDir, command } = config;
  return [home, runHome, sandboxDir, envsDir, logDir, scriptsDir, command.workspace];
}

/**
 * The first directory from `root` down to `path` (both included) that is not root's, where `path`
 * lies in `root`: a user's, where a working_dir run may write; undefined when there is none.
 */
function userDirOnTheWay(root: string, path: string): string | undefined {
  if (!isWithin(path, root)) return undefined;
  const parts = relative(root, path).split('/').filter(Boolean);
  for (let depth = 0; depth <= parts.length; depth++) {
    const dir = join(root, ...parts.slice(0, depth));
    if (statSync(dir, { throwIfNoEntry: false })?.uid !== 0) return dir;
  }
  return undefined;
}

/** Every mount point of this mount namespace (/proc/self/mountinfo, octal escapes undone). */
function mountPoints(): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) =>
      (line.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_, octal: string) =>
        String.fromCharCode(Number.parseInt(octal, 8)),
      ),
    );
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
