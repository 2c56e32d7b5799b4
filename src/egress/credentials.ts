// Credentials by placeholder (CODEXEC_CREDENTIALS): each value is read once, at start-up, and
// stays in the server. Code gets a random placeholder in its environment; the egress proxy puts
// the value in place of it in requests to the credential's hosts only (over HTTPS, through
// intercept.ts), masks it back out of their answers, and refuses a placeholder seen anywhere else.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { CredentialRule } from '../config/credentials.js';
import { ConfigError } from '../errors/index.js';
import { caFiles, EgressCa } from './ca.js';
import { type HostRule, matches, parseRules } from './rules.js';

/** One credential, held. */
export interface Credential {
  readonly name: string;
  readonly placeholder: string;
  readonly value: string;
  readonly hosts: readonly HostRule[];
  readonly header: CredentialRule['header'];
}

/** A placeholder seen where it may not go: which credential, and where it was. */
export interface Misplaced {
  readonly credential: Credential;
  readonly where: string;
}

export class Credentials {
  readonly all: readonly Credential[];
  /** The proxy's CA, opened (made, the first time) as the server starts; lanes wait for it. */
  readonly ca: Promise<EgressCa>;
  readonly #files: ReturnType<typeof caFiles>;

  /**
   * Read every value (one trailing newline dropped): a file that cannot be read, an empty value,
   * or one with a control character (it goes into a header) stops start-up, named.
   */
  constructor(rules: readonly CredentialRule[], where: { readonly home: string; readonly runHome: string }) {
    this.all = rules.map((rule) => ({
      name: rule.name,
      placeholder: `codexec-placeholder-${randomBytes(16).toString('hex')}`,
      value: readValue(rule),
      hosts: parseRules(rule.hosts.join(','), rule.name),
      header: rule.header,
    }));
    this.#files = caFiles(where.runHome);
    this.ca = EgressCa.open(where.home, where.runHome);
    this.ca.catch(() => {}); // reported by the lane that waits for it
  }

  /**
   * What every sandbox with a lane gets: each placeholder, and the trust stores of OpenSSL (Python,
   * curl), requests, pip, npm and git, and Node's extra CAs, holding the proxy's CA.
   */
  env(): Record<string, string> {
    const { bundle, certificate } = this.#files;
    const placeholders = Object.fromEntries(
      this.all.map((credential) => [credential.name, credential.placeholder]),
    );
    return {
      SSL_CERT_FILE: bundle,
      CURL_CA_BUNDLE: bundle,
      REQUESTS_CA_BUNDLE: bundle,
      PIP_CERT: bundle,
      NPM_CONFIG_CAFILE: bundle,
      GIT_SSL_CAINFO: bundle,
      NODE_EXTRA_CA_CERTS: certificate,
      ...placeholders,
    };
  }

  /** Files those variables name, which a sandbox must read. */
  files(): string[] {
    return [this.#files.bundle, this.#files.certificate];
  }

  /** The credentials that may go to `host`:`port` (its connections are intercepted). */
  for(host: string, port: number): Credential[] {
    return this.all.filter((credential) =>
      credential.hosts.some((rule) => matches({ ...rule, port: rule.port ?? 443 }, host, port)),
    );
  }

  /** The first placeholder in `text`, if any. */
  find(text: string): Credential | undefined {
    if (!text.includes('codexec-placeholder-')) return undefined;
    return this.all.find((credential) => text.includes(credential.placeholder));
  }

  /** The first placeholder in a URL or in raw headers (name, value, …), and where. */
  misplaced(url: string, raw: readonly string[]): Misplaced | undefined {
    const inUrl = this.find(url);
    if (inUrl) return { credential: inUrl, where: 'the URL' };
    for (let index = 0; index + 1 < raw.length; index += 2) {
      const name = raw[index] as string;
      const found = this.find(name) ?? this.find(raw[index + 1] as string);
      if (found) return { credential: found, where: `header ${name}` };
    }
    return undefined;
  }
}

function readValue(rule: CredentialRule): string {
  let text: string;
  try {
    text = readFileSync(rule.file, 'utf8');
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError(`CODEXEC_CREDENTIALS: ${rule.name}: cannot read ${rule.file} (${why})`);
  }
  const value = text.replace(/\r?\n$/, '');
  if (value === '') throw new ConfigError(`CODEXEC_CREDENTIALS: ${rule.name}: ${rule.file} is empty`);
  if (/\p{Cc}/u.test(value))
    throw new ConfigError(
      `CODEXEC_CREDENTIALS: ${rule.name}: ${rule.file} holds a control character (a line break?): a value goes into a header`,
    );
  return value;
}
