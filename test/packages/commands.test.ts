import { describe, expect, it } from 'vitest';
import { installerEnvAdditions, npmInstallArgv, pipInstallArgv } from '../../src/packages/commands.js';

describe('installer command lines', () => {
  it('names npm the operator’s global and user config files beside --prefix, with bounded retries', () => {
    const argv = npmInstallArgv(
      '/usr/bin/npm',
      '/home/u/.codexec/envs/node',
      { globalconfig: '/usr/etc/npmrc', userconfig: '/home/u/.npmrc' },
      'lodash@^4',
    );
    const flagValue = (flag: string) => argv[argv.indexOf(flag) + 1];
    expect(flagValue('--prefix')).toBe('/home/u/.codexec/envs/node');
    expect(flagValue('--globalconfig')).toBe('/usr/etc/npmrc');
    expect(flagValue('--userconfig')).toBe('/home/u/.npmrc');
    expect(argv).toContain('--fetch-retries=1');
    expect(argv).toContain('--no-global');
    expect(argv).toContain('--ignore-scripts'); // scripts run later, in the sandbox
    expect(argv.at(-1)).toBe('lodash@^4');
  });

  it('runs pip into its --target with bounded retries and the spec last', () => {
    const argv = pipInstallArgv('/usr/bin/python3', '/t', 'pandas>=2');
    expect(argv.slice(0, 6)).toEqual(['/usr/bin/python3', '-m', 'pip', 'install', '--target', '/t']);
    expect(argv[argv.indexOf('--retries') + 1]).toBe('1');
    expect(argv[argv.indexOf('--only-binary') + 1]).toBe(':all:'); // no sdist's code on the host
    expect(argv.at(-1)).toBe('pandas>=2');
  });
});

describe('installer environment', () => {
  const host = {
    PIP_INDEX_URL: 'https://mirror/simple',
    PIP_CONFIG_FILE: '/etc/codexec-pip.conf',
    NPM_CONFIG_REGISTRY: 'https://mirror/npm/',
    npm_config_cafile: '/ca.pem',
    XDG_CONFIG_DIRS: '/etc/xdg-site',
    XDG_CONFIG_HOME: '/home/u/.cfg',
    HTTPS_PROXY: 'http://proxy:3128',
    NODE_EXTRA_CA_CERTS: '/ca.pem',
    PIP_USER: '1',
    AWS_SECRET_ACCESS_KEY: 'x',
    OPENAI_API_KEY: 'y',
  };

  it('passes on the package managers’ config, config-file locations, proxy and CA variables', () => {
    expect(installerEnvAdditions(host)).toMatchObject({
      PIP_INDEX_URL: 'https://mirror/simple',
      PIP_CONFIG_FILE: '/etc/codexec-pip.conf',
      NPM_CONFIG_REGISTRY: 'https://mirror/npm/',
      npm_config_cafile: '/ca.pem',
      XDG_CONFIG_DIRS: '/etc/xdg-site',
      XDG_CONFIG_HOME: '/home/u/.cfg',
      HTTPS_PROXY: 'http://proxy:3128',
      NODE_EXTRA_CA_CERTS: '/ca.pem',
    });
  });

  it('passes nothing else, and keeps pip from installing anywhere but --target', () => {
    const env = installerEnvAdditions(host);
    expect(env).not.toHaveProperty('AWS_SECRET_ACCESS_KEY');
    expect(env).not.toHaveProperty('OPENAI_API_KEY');
    expect(env).toMatchObject({ PIP_USER: '0', PIP_REQUIRE_VIRTUALENV: '0' });
  });
});
