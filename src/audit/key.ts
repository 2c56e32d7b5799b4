import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

// The audit key: 32 random bytes in `$CODEXEC_HOME/audit.key` (mode 0600, outside the log
// directory), made by the first entry. Entries and the anchor carry an HMAC-SHA256 under it, so
// someone who can write the log directory but not read the key cannot rewrite the trail.

const KEY_BYTES = 32;

/** The key at `path`; undefined when there is none yet. A file of another size is an error. */
export function readKey(path: string): Buffer | undefined {
  let key: Buffer;
  try {
    key = readFileSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  if (key.length !== KEY_BYTES) throw new Error(`${path} is not an audit key (${KEY_BYTES} bytes expected)`);
  return key;
}

/**
 * The key at `path`, made first when there is none (`created`). It is written whole to a file of
 * its own and then linked into place, which fails if another process got there first: every
 * process ends up with the one key, and none ever reads a half-written one.
 */
export function loadOrCreateKey(path: string): { readonly key: Buffer; readonly created: boolean } {
  const existing = readKey(path);
  if (existing) return { key: existing, created: false };
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, randomBytes(KEY_BYTES), { mode: 0o600, flag: 'w' });
  let created = true;
  try {
    linkSync(temp, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    created = false;
  } finally {
    rmSync(temp, { force: true });
  }
  return { key: readKey(path) as Buffer, created };
}

export const hmacHex = (key: Buffer, text: string) =>
  createHmac('sha256', key).update(text, 'utf8').digest('hex');

/** Whether `mac` (hex) is the HMAC of `text` under `key`, compared in constant time. */
export function hmacMatches(key: Buffer, text: string, mac: unknown): boolean {
  if (typeof mac !== 'string' || !/^[0-9a-f]{64}$/.test(mac)) return false;
  return timingSafeEqual(Buffer.from(hmacHex(key, text), 'hex'), Buffer.from(mac, 'hex'));
}
