import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { z } from 'zod';
import type { NpmConfigFiles } from './commands.js';

const run = promisify(execFile);

const filesSchema = z.object({ globalconfig: z.string().min(1), userconfig: z.string().min(1) });

/** npm's answer, or its own output when it could not give one (a broken npmrc, say). */
export type NpmConfigAnswer =
  | { readonly ok: true; readonly files: NpmConfigFiles }
  | { readonly ok: false; readonly output: string };

/**
 * Ask the operator's npm, with the installer's environment, which global and user config files it
 * reads. npm works the global one out from its own prefix (`$PREFIX/etc/npmrc`, the prefix coming
 * from npm_config_prefix, a `prefix=` in the user config, or where node lives), so asking it is
 * the one way to get the answer every npm version and setup agrees with.
 */
export async function readNpmConfigFiles(
  npm: string,
  env: Readonly<Record<string, string>>,
  cwd: string,
): Promise<NpmConfigAnswer> {
  try {
    const { stdout } = await run(npm, ['config', 'get', 'globalconfig', 'userconfig'], {
      env,
      cwd,
      timeout: 30_000,
    });
    // Asked for two keys, npm prints `key=value` lines (and ignores --json).
    const pairs = stdout.split('\n').map((line) => /^(\w+)=(.*)$/.exec(line.trim()));
    const found = Object.fromEntries(pairs.flatMap((m) => (m?.[1] ? [[m[1], m[2]]] : [])));
    return { ok: true, files: filesSchema.parse(found) };
  } catch (error) {
    const failure = error as { stderr?: string; stdout?: string; message?: string };
    const output = [failure.stderr, failure.stdout].filter(Boolean).join('\n').trim();
    const reason = output || String(failure.message ?? error);
    return { ok: false, output: `npm config get globalconfig userconfig failed: ${reason}` };
  }
}
