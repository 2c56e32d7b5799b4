import { execFile } from 'node:child_process';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Language } from '../runtimes/index.js';

const run = promisify(execFile);

// Python: a distribution counts as installed when importlib.metadata knows it (pip's names, so
// "scikit-learn" works where an import check would need "sklearn").
const PY_CHECK =
  'import sys, json, importlib.metadata as m\n' +
  'missing = []\n' +
  'for name in json.loads(sys.argv[1]):\n' +
  '    try: m.version(name)\n' +
  '    except m.PackageNotFoundError: missing.append(name)\n' +
  'print(json.dumps(missing))';

export interface CheckContext {
  /** Absolute python interpreter. */
  readonly python: () => Promise<string>;
  /** Directories searched for python distributions besides the interpreter's own. */
  readonly pythonPath: readonly string[];
  /** node_modules directories searched for node packages. */
  readonly nodeModules: readonly string[];
}

/** Which of `packages` the language cannot find. Bash scripts have no package manager here. */
export async function findMissingPackages(
  language: Language,
  packages: readonly string[],
  context: CheckContext,
): Promise<string[]> {
  if (packages.length === 0 || language === 'bash') return [];
  if (language === 'python') {
    const names = packages.map(pythonName);
    const { stdout } = await run(await context.python(), ['-c', PY_CHECK, JSON.stringify(names)], {
      env: { PYTHONPATH: context.pythonPath.join(':'), PATH: process.env.PATH ?? '' },
      timeout: 30_000,
    });
    const missing = new Set(JSON.parse(stdout) as string[]);
    return packages.filter((_, i) => missing.has(names[i] ?? ''));
  }
  const missing: string[] = [];
  for (const name of packages) {
    const found = await Promise.any(
      context.nodeModules.map((dir) => access(join(dir, bareName(name), 'package.json'))),
    ).then(
      () => true,
      () => false,
    );
    if (!found) missing.push(name);
  }
  return missing;
}

/** `pandas>=2.0` → `pandas`, `requests[socks]` → `requests`. */
function pythonName(spec: string): string {
  return spec.split(/[<>=!~[;\s]/)[0] ?? spec;
}

/** `lodash@4` → `lodash`, `@scope/pkg@^1` → `@scope/pkg`. */
function bareName(spec: string): string {
  const at = spec.indexOf('@', 1);
  return at === -1 ? spec : spec.slice(0, at);
}
