import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { ConfigError } from '../errors/index.js';

const MIN_KEY_BYTES = 32;

/**
 * The key that signs approval tickets and calls between replicas: CODEXEC_APPROVAL_KEY_FILE's
 * bytes (at least 32, hashed to 32), or a random key of this process's own when unset (one server:
 * nobody else needs to verify what it signs). A file others can read is refused.
 */
export function loadApprovalKey(file: string | undefined): Buffer {
  if (file === undefined) return randomBytes(32);
  let bytes: Buffer;
  try {
    if ((statSync(file).mode & 0o077) !== 0)
      throw new ConfigError(
        `CODEXEC_APPROVAL_KEY_FILE: ${file} can be read by others; chmod 600 it (anyone with the key can approve runs)`,
      );
    bytes = readFileSync(file);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`CODEXEC_APPROVAL_KEY_FILE: cannot read ${file} (${(error as Error).message})`);
  }
  if (bytes.length < MIN_KEY_BYTES)
    throw new ConfigError(
      `CODEXEC_APPROVAL_KEY_FILE: ${file} has ${bytes.length} bytes; a key needs at least ${MIN_KEY_BYTES} (head -c 32 /dev/urandom > ${file})`,
    );
  return createHash('sha256').update(bytes).digest();
}

/** A key for one purpose, derived from the approval key (tickets and replica calls never share one). */
export function deriveKey(key: Uint8Array, purpose: string): Buffer {
  return createHash('sha256').update(key).update(`\0codexec ${purpose}`).digest();
}
