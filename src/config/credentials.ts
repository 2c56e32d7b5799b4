import { z } from 'zod';
import { parseRules } from '../egress/rules.js';
import { ConfigError } from '../errors/index.js';
import { expandHome } from '../util/index.js';
import { readJsonFile } from './json-file.js';

// CODEXEC_CREDENTIALS: secrets code may use but never hold. The file names, per credential, the
// file its value is read from (never the value itself), the hosts it may be sent to and the
// header it goes in; code gets a placeholder in its environment, and the egress proxy puts the
// value in place of it on the way to those hosts only (egress/credentials.ts).

/** One credential as the server uses it: where its value is, not the value. */
export interface CredentialRule {
  /** The environment variable code finds its placeholder in. */
  readonly name: string;
  /** The file its value is read from at start-up. */
  readonly file: string;
  /** Where it may be sent: host rules (`name`, `*.name`, with `:port`; 443 when none is given). */
  readonly hosts: readonly string[];
  /** The header it goes in, and the header's value around it (`Bearer ` before, nothing after). */
  readonly header: { readonly name: string; readonly before: string; readonly after: string };
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A header name (RFC 9110 token) and its value around `{value}`: no control characters. */
const TEMPLATE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*([^\p{Cc}]*)$/u;
/** Headers a proxy or the HTTP framing owns: a credential never goes there. */
const RESERVED = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'proxy-authorization',
  'upgrade',
]);

/** Made for each read (once, at start) and let go: no server holds it after. */
const fileSchema = () =>
  z.record(
    z.string(),
    z.strictObject({
      file: z
        .string()
        .min(1)
        .refine((path) => path.startsWith('/') || path.startsWith('~'), 'file must be an absolute path')
        .describe('The file holding the value (read at start-up; one trailing newline dropped).'),
      hosts: z.array(z.string().min(1)).min(1, 'name at least one host').describe('Where it may be sent.'),
      header: z
        .string()
        .describe('The header it goes in, {value} where the value goes: "Authorization: Bearer {value}".'),
    }),
  );
const EXPECTED =
  '{"<ENV_NAME>": {"file": "/run/secrets/key", "hosts": ["api.example.com"], "header": "Authorization: Bearer {value}"}}';

/**
 * CODEXEC_CREDENTIALS's file, checked: names, hosts and header templates (values are read when
 * the server holds them, egress/credentials.ts). Only the egress proxy can put a value in: a
 * network other than the allowlist stops the start, as does a host the allowlist does not name.
 */
export function readCredentials(
  file: string,
  home: string,
  network: string,
  allowed: readonly string[],
): readonly CredentialRule[] {
  const entries = readJsonFile('CODEXEC_CREDENTIALS', file, fileSchema(), EXPECTED);
  const names = Object.keys(entries);
  const misnamed = names.find((name) => !ENV_NAME.test(name));
  if (misnamed !== undefined)
    throw new ConfigError(
      `CODEXEC_CREDENTIALS: ${JSON.stringify(misnamed)}: a credential is named as the environment variable code finds it in (letters, digits, _)`,
    );
  if (names.length > 0 && network !== 'allowlist')
    throw new ConfigError(
      `CODEXEC_CREDENTIALS: needs CODEXEC_NETWORK=allowlist (the egress proxy puts each value in), not ${network}`,
    );
  const allowedRules = parseRules(allowed.join(','), 'CODEXEC_ALLOWED_DOMAINS');
  return names.map((name) => {
    const entry = entries[name] as (typeof entries)[string];
    const where = `CODEXEC_CREDENTIALS: ${name}`;
    const rules = parseRules(entry.hosts.join(','), `${where}.hosts`, (message) => new ConfigError(message));
    for (const rule of rules) {
      const port = rule.port ?? 443;
      const listed = allowedRules.some(
        (it) =>
          (it.port ?? 443) === port &&
          ((it.host === rule.host && it.wildcard === rule.wildcard) ||
            (it.wildcard && rule.host.endsWith(`.${it.host}`))),
      );
      if (!listed)
        throw new ConfigError(
          `${where}.hosts: ${rule.text} is not in CODEXEC_ALLOWED_DOMAINS, so code could not reach it; list it there too`,
        );
    }
    return {
      name,
      file: expandHome(entry.file, home),
      hosts: entry.hosts,
      header: template(entry.header, where),
    };
  });
}

/** `Name: before{value}after`, split; one `{value}`, a header the proxy does not own. */
function template(text: string, where: string): CredentialRule['header'] {
  const match = TEMPLATE.exec(text);
  const parts = match?.[2]?.split('{value}');
  if (!match || parts?.length !== 2)
    throw new ConfigError(
      `${where}.header: "${text}" is not a header with one {value} in it (e.g. "Authorization: Bearer {value}")`,
    );
  const name = (match[1] as string).toLowerCase();
  if (RESERVED.has(name))
    throw new ConfigError(`${where}.header: ${match[1]} is the proxy's or the framing's own`);
  return { name, before: parts[0] as string, after: parts[1] as string };
}
