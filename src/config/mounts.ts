import { z } from 'zod';
import { ConfigError } from '../errors/index.js';
import { expandHome, isWithin } from '../util/index.js';
import { readJsonFile } from './json-file.js';

// CODEXEC_MOUNTS: directories the operator lends to runs, read-only, each to the principals it
// names. Only the operator's file names them; no tool argument can. What can only be checked on
// the disk (the source is a directory, lies outside codexec's own state and where code writes) is
// checked when the server holds them (engine/mounts.ts).

/** One operator mount, as the server uses it. */
export interface MountRule {
  /** The host directory, absolute. */
  readonly source: string;
  /** Where runs see it, absolute (default the source). */
  readonly target: string;
  /** The principals whose runs and sessions get it; `*` is every principal. */
  readonly principals: readonly string[];
}

/**
 * Paths every sandbox has of its own (the system, the workspace of docker mode, codexec's
 * drivers): a mount there would hide what runs need, so none may lie at or under one.
 */
const SANDBOX_PATHS = [
  '/bin',
  '/dev',
  '/etc',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/opt/codexec',
  '/proc',
  '/run',
  '/sbin',
  '/sys',
  '/tmp',
  '/usr',
  '/var',
  '/workspace',
];

const absolute = (what: string) =>
  z
    .string()
    .min(1)
    .refine((path) => path.startsWith('/') || path.startsWith('~'), `${what} must be an absolute path`);

/** Made for each read (once, at start) and let go: no server holds it after. */
const fileSchema = () =>
  z.array(
    z.strictObject({
      source: absolute('source').describe('The host directory lent, read-only.'),
      target: absolute('target').optional().describe('Where runs see it (default: the source).'),
      principals: z
        .array(z.string().min(1))
        .min(1, 'name at least one principal, or "*" for every principal')
        .describe('Who gets it: principal names, or "*" for every principal.'),
    }),
  );
const EXPECTED = '[{"source": "/srv/data", "target": "/data", "principals": ["<principal>" | "*"]}]';

/** Longest path an entry may give (a target is an argument of every sandbox's command line). */
const MAX_PATH = 1024;
/** Most mounts a file may list: each is a bind in every sandbox of its principals. */
const MAX_MOUNTS = 64;
/** Sources that are no directory of files: the kernel's and the devices'. */
const VIRTUAL = ['/proc', '/sys', '/dev'];

/**
 * An entry's path, `~` expanded and normalized; never `/` itself, never with a control character
 * (a NUL would split a sandbox's argument list), nor in docker mode with the `:` or `,` an
 * engine's volume option splits on.
 */
function pathOf(text: string, home: string, what: string, index: number, mode: string): string {
  const path = expandHome(text, home);
  const bad = (why: string) => new ConfigError(`CODEXEC_MOUNTS: ${index}.${what}: ${why}`);
  if (path === '/') throw bad('/ cannot be mounted or covered');
  if (/\p{Cc}/u.test(path)) throw bad('a path with a control character');
  if (path.length > MAX_PATH) throw bad(`a path of over ${MAX_PATH} characters`);
  if (mode === 'docker' && /[:,]/.test(path))
    throw bad(`${path}: a container engine cannot bind a path with : or ,`);
  return path;
}

/**
 * CODEXEC_MOUNTS's file, checked: plain absolute paths, targets clear of the sandbox's own paths
 * and of each other. Landlock mode has no mount namespace: a mount is read at its own path there,
 * so a target must be its source; subprocess mode confines nothing, so no principal could be kept
 * from a mount.
 */
export function readMounts(file: string, home: string, mode: string): readonly MountRule[] {
  const entries = readJsonFile('CODEXEC_MOUNTS', file, fileSchema(), EXPECTED);
  if (entries.length > MAX_MOUNTS)
    throw new ConfigError(`CODEXEC_MOUNTS: ${entries.length} mounts, more than ${MAX_MOUNTS}`);
  if (entries.length > 0 && mode === 'subprocess')
    throw new ConfigError(
      'CODEXEC_MOUNTS: subprocess mode confines nothing, so a mount cannot be kept from a principal; use namespace, landlock, docker or auto',
    );
  const rules = entries.map((entry, index): MountRule => {
    const source = pathOf(entry.source, home, 'source', index, mode);
    const device = VIRTUAL.find((root) => isWithin(source, root));
    if (device)
      throw new ConfigError(
        `CODEXEC_MOUNTS: ${index}.source: ${source} is in ${device}, which holds no files to lend`,
      );
    const target = pathOf(entry.target ?? entry.source, home, 'target', index, mode);
    // (Landlock mode covers nothing: code reads the source where it is.)
    const clash =
      mode !== 'landlock' && SANDBOX_PATHS.find((path) => isWithin(target, path) || isWithin(path, target));
    if (clash)
      throw new ConfigError(
        `CODEXEC_MOUNTS: ${index}.target: ${target} would cover ${clash}, which every sandbox has of its own; choose another target (e.g. /data or /mnt/<name>)`,
      );
    if (mode === 'landlock' && target !== source)
      throw new ConfigError(
        `CODEXEC_MOUNTS: ${index}.target: landlock mode has no mount namespace, so code reads a mount at its source path; set target to ${source} or leave it out`,
      );
    return { source, target, principals: [...new Set(entry.principals)] };
  });
  // Two targets may nest or meet only where no principal gets both (alice's /data, bob's /data).
  for (const [index, rule] of rules.entries()) {
    const other = rules.findIndex(
      (it, at) =>
        at > index &&
        (isWithin(rule.target, it.target) || isWithin(it.target, rule.target)) &&
        shareAPrincipal(rule, it),
    );
    if (other >= 0)
      throw new ConfigError(
        `CODEXEC_MOUNTS: ${other}.target: ${rules[other]?.target} overlaps mount ${index}'s target ${rule.target} for a principal both are given to; give each a target of its own`,
      );
  }
  return rules;
}

const shareAPrincipal = (a: MountRule, b: MountRule) =>
  a.principals.includes('*') ||
  b.principals.includes('*') ||
  a.principals.some((p) => b.principals.includes(p));

/** The mounts `principal` is given. */
export function mountsOf(rules: readonly MountRule[], principal: string): MountRule[] {
  return rules.filter((rule) => rule.principals.includes('*') || rule.principals.includes(principal));
}
