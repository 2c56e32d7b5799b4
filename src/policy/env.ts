/** The only host variables sandboxed code ever sees (the seed's list plus TMPDIR and USER). */
export const ENV_ALLOWLIST = ['PATH', 'HOME', 'LANG', 'TERM', 'TMPDIR', 'USER'] as const;

/**
 * Build the code's environment from scratch: allowlisted host values, then runtime additions.
 * With `confinedHome` (a sandbox where the host's home and temp dirs do not exist), HOME points
 * at the writable workspace and TMPDIR at the sandbox's private /tmp instead.
 */
export function sandboxEnv(
  host: NodeJS.ProcessEnv,
  additions: Readonly<Record<string, string>> = {},
  confinedHome?: string,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ENV_ALLOWLIST) {
    const value = host[name];
    if (value !== undefined) env[name] = value;
  }
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  if (confinedHome !== undefined) {
    env.HOME = confinedHome;
    env.TMPDIR = '/tmp';
  }
  return { ...env, ...additions };
}
