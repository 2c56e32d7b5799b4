// The installers' command lines and environment, built as data (tested without spawning).
//
// An install must reach the registry the way the operator's own `pip install` / `npm install`
// would: same config files (registry, index URL, CA, proxy), same PIP_* / npm_config_* / proxy /
// CA variables. Only where the packages land is codexec's choice, so the settings that would move
// them elsewhere (pip's `user`, npm's `global`) are overridden, nothing else.

/** Host variables the installers see beside the stripped basics (PATH, HOME, …). */
const INSTALLER_ENV =
  /^(PIP_\w+|npm_config_\w+|NPM_CONFIG_\w+|XDG_CONFIG_HOME|XDG_CONFIG_DIRS|NODE_OPTIONS|NODE_EXTRA_CA_CERTS|NODE_USE_ENV_PROXY|NODE_USE_SYSTEM_CA|SSL_CERT_FILE|SSL_CERT_DIR|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|(HTTPS?|NO|ALL)_PROXY|(https?|no|all)_proxy)$/;

/** The variables, from `host`, that carry the operator's package-manager configuration. */
export function installerEnvAdditions(host: NodeJS.ProcessEnv): Record<string, string> {
  const extra: Record<string, string> = {};
  for (const [name, value] of Object.entries(host)) {
    if (INSTALLER_ENV.test(name) && value !== undefined) extra[name] = value;
  }
  // `user = true` in a pip.conf ("Can not combine '--user' and '--target'") and
  // `require-virtualenv` would stop every install into codexec's own --target directory.
  extra.PIP_USER = '0';
  extra.PIP_REQUIRE_VIRTUALENV = '0';
  return extra;
}

/**
 * Bounded retries: a registry that cannot be reached fails in seconds with the installer's own
 * message. npm's defaults (2 retries, 10 s then 60 s back-off) took 71 s to report a bad CA.
 */
const PIP_NETWORK = ['--retries', '1', '--timeout', '30'];
const NPM_NETWORK = [
  '--fetch-retries=1',
  '--fetch-retry-mintimeout=1000',
  '--fetch-retry-maxtimeout=5000',
  '--fetch-timeout=60000',
];

export function pipInstallArgv(python: string, target: string, spec: string): string[] {
  return [
    python,
    '-m',
    'pip',
    'install',
    '--target',
    target,
    '--upgrade',
    // Wheels only: building an sdist runs the package's code, never done on the host (installer.ts).
    '--only-binary',
    ':all:',
    '--disable-pip-version-check',
    '--no-input',
    ...PIP_NETWORK,
    spec,
  ];
}

/** The config files the operator's npm reads (`npm config get globalconfig userconfig`). */
export interface NpmConfigFiles {
  readonly globalconfig: string;
  readonly userconfig: string;
}

/**
 * `--prefix DIR` also moves npm's global config to `DIR/etc/npmrc`, so the operator's one (where
 * a registry, `cafile` or proxy usually lives) is named explicitly, and the user config with it.
 */
export function npmInstallArgv(npm: string, prefix: string, files: NpmConfigFiles, spec: string): string[] {
  return [
    npm,
    'install',
    '--prefix',
    prefix,
    '--globalconfig',
    files.globalconfig,
    '--userconfig',
    files.userconfig,
    '--no-global',
    '--location=project',
    '--no-audit',
    '--no-fund',
    '--no-update-notifier',
    // Install scripts run afterwards in the code sandbox (`npm rebuild`), never on the host.
    '--ignore-scripts',
    ...NPM_NETWORK,
    spec,
  ];
}
