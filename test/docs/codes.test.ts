// The docs name no code the product does not have: every `UPPER_SNAKE` name in docs/ and the
// README is a setting (test/config/docs.test.ts checks those both ways), a string the product
// uses (a refusal code, an env variable it sets or passes on; a test helper's, for the
// development docs), or one of the names below, which belong to the kernel or to other programs. A code renamed or dropped in src/ fails here until
// the docs follow.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SETTING_NAMES } from '../../src/config/index.js';

const ROOT = new URL('../../', import.meta.url).pathname;

/** Names of the kernel and of other programs the docs explain, which codexec neither emits nor sets. */
const EXTERNAL = new Set([
  ...['AF_UNIX', 'MSG_FASTOPEN', 'O_NOFOLLOW', 'RENAME_EXCHANGE', 'SCM_RIGHTS', 'TCP_FASTOPEN_CONNECT'],
  ...[
    'PR_CAPBSET_DROP',
    'PR_CAP_AMBIENT_CLEAR_ALL',
    'PR_SET_NO_NEW_PRIVS',
    'PR_SET_PDEATHSIG',
    'CAP_SYS_ADMIN',
  ],
  ...['RLIMIT_DATA', 'RLIMIT_FSIZE', 'RLIMIT_NPROC', 'MALLOC_ARENA_MAX'],
  ...['CURL_CA_BUNDLE', 'REQUESTS_CA_BUNDLE', 'NODE_EXTRA_CA_CERTS', 'NODE_OPTIONS', 'PIP_CONFIG_FILE'],
  ...['SSL_CERT_FILE', 'PIP_CERT', 'NPM_CONFIG_CAFILE', 'GIT_SSL_CAINFO'],
  ...['HTTP_PROXY', 'NO_PROXY', 'VIRTUAL_ENV', 'XDG_CONFIG_DIRS', 'XDG_CONFIG_HOME'],
  'MY_API_KEY', // an example secret's name
  'CODEXEC_URL', // the variable http.md's curl examples read
]);

function files(dir: string, suffix: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : files(path, suffix);
    return path.endsWith(suffix) ? [path] : [];
  });
}

describe('the names docs/ gives codes and variables', () => {
  it('are settings, strings the product uses, or the outside names listed here', () => {
    const docs = [...files(join(ROOT, 'docs'), '.md'), join(ROOT, 'README.md')];
    const named = new Set(
      docs.flatMap((path) =>
        [...readFileSync(path, 'utf8').matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`/g)].map(
          (m) => m[1] as string,
        ),
      ),
    );
    // The product, and the test helpers the development docs' variables are read by.
    const source = [
      ...files(join(ROOT, 'src'), '.ts'),
      ...files(join(ROOT, 'drivers'), ''),
      ...files(join(ROOT, 'test', 'helpers'), '.ts'),
    ]
      .map((path) => readFileSync(path, 'utf8'))
      .join('\n');
    const settings = new Set<string>(SETTING_NAMES);
    const unknown = [...named].filter(
      (name) =>
        !settings.has(name) &&
        !name.startsWith('OTEL_') && // read by the OpenTelemetry exporter itself
        !EXTERNAL.has(name) &&
        // A string, or a variable read by name (process.env.NAME).
        !new RegExp(`['"\`]${name}['"\`]|\\.${name}\\b`).test(source),
    );
    expect(unknown).toEqual([]);
    expect(named.size).toBeGreaterThan(40); // it read the docs
  });
});
