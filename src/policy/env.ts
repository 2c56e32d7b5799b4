/** The only host variables sandboxed code ever sees (the seed's list plus TMPDIR and USER). */
export const ENV_ALLOWLIST = ['PATH', 'HOME', 'LANG', 'TERM', 'TMPDIR', 'USER'] as const;

/** Build the code's environment from scratch: allowlisted host values, then runtime additions. */
export function sandboxEnv(
  host: NodeJS.ProcessEnv,
  additions: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ENV_ALLOWLIST) {
    const value = host[name];
    if (value !== undefined) env[name] = value;
  }
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  return { ...env, ...additions };
}
