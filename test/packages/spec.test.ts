import { describe, expect, it } from 'vitest';
import { parsePackageSpec } from '../../src/packages/index.js';

describe('parsePackageSpec', () => {
  it.each([
    ['python', 'pandas', 'pandas', 'pandas'],
    ['python', 'pandas>=2.0', 'pandas', 'pandas>=2.0'],
    ['python', 'requests[socks] >= 2.31, < 3', 'requests', 'requests[socks]>=2.31,<3'],
    ['python', 'scikit-learn==1.5.0', 'scikit-learn', 'scikit-learn==1.5.0'],
    ['node', 'lodash', 'lodash', 'lodash'],
    ['node', 'lodash@^4.17.21', 'lodash', 'lodash@^4.17.21'],
    ['node', '@types/node@20', '@types/node', '@types/node@20'],
    ['node', 'is-number@>=7 <8', 'is-number', 'is-number@>=7 <8'],
  ] as const)('accepts %s %j', (language, raw, name, spec) => {
    expect(parsePackageSpec(language, raw, [])).toEqual({ name, spec });
  });

  it.each([
    ['python', 'pandas; rm -rf /'],
    ['python', '--index-url=http://evil.example/simple'],
    ['python', '-e .'],
    ['python', '../../etc/passwd'],
    ['python', 'git+https://github.com/x/y'],
    ['python', 'https://evil.example/x.whl'],
    ['python', '$(whoami)'],
    ['python', 'pandas && curl evil'],
    ['python', 'pandas @ file:///tmp/x'],
    ['node', 'lodash && echo pwned'],
    ['node', 'file:../x'],
    ['node', 'github:user/repo'],
    ['node', '--registry=http://evil'],
    ['node', 'lodash@`id`'],
    ['node', 'Lodash'],
    ['node', 'lodash@http://evil/x.tgz'],
  ] as const)('refuses %s %j', (language, raw) => {
    expect(() => parsePackageSpec(language, raw, [])).toThrow(/registry name/);
  });

  it('refuses blocklisted names however they are spelled', () => {
    expect(() => parsePackageSpec('python', 'Evil_Pkg>=1', ['evil-pkg'])).toThrow(/blocklist/);
    expect(() => parsePackageSpec('node', 'evil@1', ['evil'])).toThrow(/blocklist/);
  });
});
