import { CodexecError, InvalidInputError } from '../errors/index.js';

export type PackageLanguage = 'python' | 'node';

// A registry name with an optional version spec, and nothing else: no URLs, paths, options,
// extras with odd characters, or anything a shell would treat specially. Installers are spawned
// with argv arrays, never a shell, but the registry name is the only thing we mean to pass.
const PYTHON_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?(?:\[[A-Za-z0-9_,-]{1,100}\])?$/;
const PYTHON_VERSION = /^(?:===|==|>=|<=|~=|!=|>|<)[A-Za-z0-9.*+!_-]{1,50}$/;
const NODE_NAME = /^(?:@[a-z0-9][a-z0-9._-]{0,100}\/)?[a-z0-9][a-z0-9._-]{0,100}$/;
const NODE_RANGE = /^[A-Za-z0-9.^~<>=|*+ -]{1,100}$/;
/** Names pip or npm would take for a local file: archives and wheels, by suffix. */
const ARCHIVE = /\.(?:tar|tgz|tbz2?|txz|tlz|zip|whl|egg|gz|bz2|xz|lz|lzma|zst|7z|rar|jar)$/i;

export interface PackageSpec {
  /** The name as the registry knows it (without version or extras). */
  readonly name: string;
  /** The whole spec, passed to the installer as one argv element. */
  readonly spec: string;
}

export function parsePackageSpec(
  language: PackageLanguage,
  raw: string,
  blocklist: readonly string[],
): PackageSpec {
  const input = raw.trim();
  const parsed = language === 'python' ? parsePython(input) : parseNode(input);
  if (!parsed) {
    throw new InvalidInputError(
      `package ${JSON.stringify(raw.slice(0, 100))} is not a ${language === 'python' ? 'pip' : 'npm'} registry ` +
        `name with an optional version (e.g. ${language === 'python' ? '"pandas" or "pandas>=2.0"' : '"lodash" or "lodash@^4"'}); ` +
        'URLs, paths and options are not accepted',
    );
  }
  // pip and npm read a name that exists as a file in their working directory as a local archive
  // (code could plant one); installs run in an empty directory, and such names are refused before that.
  if (ARCHIVE.test(parsed.name)) {
    throw new InvalidInputError(
      `package ${JSON.stringify(parsed.name)} looks like an archive file, which ${language === 'python' ? 'pip' : 'npm'} ` +
        'would read from disk; give a registry name',
    );
  }
  const normalized = normalize(language, parsed.name);
  if (blocklist.some((blocked) => normalize(language, blocked) === normalized)) {
    throw new CodexecError(
      'BLOCKED_BY_POLICY',
      `package ${parsed.name} is on the blocklist (CODEXEC_PACKAGE_BLOCKLIST)`,
    );
  }
  return parsed;
}

function parsePython(input: string): PackageSpec | undefined {
  const match = /^([^<>=!~\s]+)\s*(.*)$/.exec(input);
  if (!match?.[1] || !PYTHON_NAME.test(match[1])) return undefined;
  const versions = match[2] ? match[2].split(',').map((part) => part.replace(/\s+/g, '')) : [];
  if (!versions.every((part) => PYTHON_VERSION.test(part))) return undefined;
  const name = match[1].replace(/\[.*$/, '');
  return { name, spec: versions.length > 0 ? `${match[1]}${versions.join(',')}` : match[1] };
}

function parseNode(input: string): PackageSpec | undefined {
  const at = input.indexOf('@', 1);
  const name = at === -1 ? input : input.slice(0, at);
  const range = at === -1 ? '' : input.slice(at + 1);
  if (!NODE_NAME.test(name) || (at !== -1 && !NODE_RANGE.test(range))) return undefined;
  return { name, spec: input };
}

/** pip treats `Foo_Bar`, `foo-bar` and `foo.bar` alike (PEP 503); npm names are already lower case. */
function normalize(language: PackageLanguage, name: string): string {
  return language === 'python' ? name.toLowerCase().replace(/[-_.]+/g, '-') : name;
}
