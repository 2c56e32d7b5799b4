import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import type { Config } from '../../config/index.js';
import { ConfigError } from '../../errors/index.js';
import { LOCAL_PRINCIPAL } from '../../util/index.js';

/** Who may call, by token. A principal owns what its calls create (sessions, logs). */
export interface Principals {
  /** Where the tokens came from, for the start-up line on stderr. */
  readonly source: string;
  /** The principal a bearer token belongs to, or undefined: every token is compared, in constant time. */
  identify(authorization: string | null): string | undefined;
}

const tokenFileSchema = z.record(
  z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'principal names are 1-64 of A-Z a-z 0-9 . _ -'),
  z.string().min(16, 'each token needs at least 16 characters'),
);

/**
 * Tokens from CODEXEC_HTTP_TOKENS (a file of principals), else CODEXEC_HTTP_TOKEN (principal
 * `default`), else a random token generated once into `$CODEXEC_HOME/http-token` (0600) and kept.
 */
export function loadPrincipals(config: Config): Principals {
  const { tokensFile, token } = config.http;
  if (tokensFile !== undefined) {
    return principalsFrom(readTokenFile(tokensFile), `token file ${tokensFile}`);
  }
  if (token !== undefined)
    return principalsFrom({ default: token }, 'CODEXEC_HTTP_TOKEN (principal "default")');
  const path = join(config.home, 'http-token');
  return principalsFrom(
    { default: generatedToken(path) },
    `generated token in ${path} (principal "default")`,
  );
}

function readTokenFile(path: string): Record<string, string> {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`CODEXEC_HTTP_TOKENS: cannot read ${path} as JSON (${(error as Error).message})`);
  }
  const parsed = tokenFileSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(
      `CODEXEC_HTTP_TOKENS: ${path}: ${issue?.path.join('.') || 'file'}: ${issue?.message}`,
    );
  }
  if (Object.keys(parsed.data).length === 0)
    throw new ConfigError(`CODEXEC_HTTP_TOKENS: ${path} names no principal`);
  // A token's principal never merges with the stdio client's and the command line's.
  if (Object.hasOwn(parsed.data, LOCAL_PRINCIPAL))
    throw new ConfigError(
      `CODEXEC_HTTP_TOKENS: ${path}: "${LOCAL_PRINCIPAL}" is the principal of stdio and the command line; name the token otherwise`,
    );
  const tokens = Object.values(parsed.data);
  if (new Set(tokens).size !== tokens.length) {
    throw new ConfigError(`CODEXEC_HTTP_TOKENS: ${path}: two principals share a token`);
  }
  return parsed.data;
}

/** Reuse the generated token across restarts so configured clients keep working. */
function generatedToken(path: string): string {
  try {
    const existing = readFileSync(path, 'utf8').trim();
    if (existing.length >= 16) {
      chmodSync(path, 0o600);
      return existing;
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const token = randomBytes(32).toString('base64url');
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 }); // a first start: CODEXEC_HOME may not exist yet
  writeFileSync(path, `${token}\n`, { mode: 0o600 });
  chmodSync(path, 0o600); // the mode option is filtered by the umask; the file must be 0600 exactly
  return token;
}

function principalsFrom(tokens: Record<string, string>, source: string): Principals {
  // Compare fixed-length digests: timingSafeEqual needs equal lengths, and hashing first keeps
  // the comparison's time independent of both the length and the content of the presented token.
  const digests = Object.entries(tokens).map(([principal, token]) => ({ principal, digest: sha256(token) }));
  return {
    source,
    identify(authorization) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
      if (!match?.[1]) return undefined;
      const presented = sha256(match[1]);
      let found: string | undefined;
      for (const { principal, digest } of digests) {
        if (timingSafeEqual(presented, digest)) found = principal; // no early exit: every token is compared
      }
      return found;
    },
  };
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
