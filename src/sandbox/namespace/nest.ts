// A zygote run's sandbox made by the nest (native/nest.c) instead of a bwrap per run: the same
// filesystem operations bwrap would get (args.ts filesystemOps), split into what every run of a
// zygote shares, read-only (the template: system binds, the /etc copy, the drivers' view, /dev's
// nodes, mount points), and what each run gets of its own (proc, tmpfs, devpts, its workspace).
// Pure: no I/O.
import { dirname } from 'node:path';
import type { FsOp } from './args.js';

/** The nest's command lines: the template's (a key for it too) and the run's. */
export interface NestPlan {
  readonly template: readonly string[];
  readonly run: readonly string[];
}

/** What the nest takes on one command line (native/nest.c MAX_OPS). */
const MAX_WORDS = 256;

const under = (path: string, root: string) =>
  path === root || path.startsWith(root === '/' ? '/' : `${root}/`);

/**
 * The nest's plan for these operations, or undefined where only bwrap can make the sandbox: a host
 * directory bound by descriptor, or a writable bind whose mount point would have to be made where
 * the template holds something.
 */
export function nestPlan(nest: string, ops: readonly FsOp[], network: boolean): NestPlan | undefined {
  const template: string[] = [];
  const run: string[] = network ? ['net'] : [];
  const runRoots: string[] = []; // the run's own tmpfs: what is made under them is the run's
  const templatePaths: string[] = [];
  const covers: string[] = [];
  let dev: string | undefined;
  const mountPoint = (path: string) => {
    if (!(dev !== undefined && dirname(path) === dev)) template.push('dir', path);
  };
  for (const op of ops) {
    const inRun = runRoots.some((root) => under(op.path, root));
    switch (op.op) {
      case 'bind-fd':
        return undefined;
      case 'symlink':
      case 'ro-bind': {
        const args = op.op === 'symlink' ? [op.target, op.path] : [op.source, op.path];
        // Inside a tmpfs of the run's (a checkout under /tmp): made there, per run, as bwrap does.
        if (inRun) run.push(op.op, ...args);
        else {
          template.push(op.op, ...args);
          templatePaths.push(op.path);
        }
        break;
      }
      case 'dir':
        if (inRun) run.push('dir', op.path);
        else template.push('dir', op.path);
        break;
      case 'proc':
        if (inRun) return undefined;
        mountPoint(op.path);
        run.push('proc', op.path);
        break;
      case 'dev':
        if (inRun) return undefined;
        template.push('dev', op.path);
        templatePaths.push(op.path);
        run.push('devpts', `${op.path}/pts`);
        dev = op.path;
        break;
      case 'tmpfs':
        if (!inRun) mountPoint(op.path);
        run.push('tmpfs', op.mode, op.bytes, op.path);
        runRoots.push(op.path);
        break;
      case 'bind': {
        // Its mount point is the run's own: in a tmpfs of the run's, or in a small one over its
        // parent (the template's root is read-only, and shared).
        const parent = dirname(op.path);
        if (!inRun && !runRoots.some((root) => under(parent, root)) && !covers.includes(parent)) {
          if (parent === '/') return undefined;
          template.push('dir', parent);
          run.push('cover', parent);
          covers.push(parent);
        }
        run.push('bind', op.source, op.path);
        break;
      }
    }
  }
  // A cover hides what the template has below it.
  if (templatePaths.some((path) => covers.some((cover) => under(path, cover)))) return undefined;
  if (template.length > MAX_WORDS || run.length > MAX_WORDS) return undefined;
  return { template: [nest, 'template', ...template], run: [nest, 'run', ...run] };
}
