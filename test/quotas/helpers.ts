// Shared by the quota suites: a quotas file in a temp dir, and the shape of a refusal.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { tempDir } from '../helpers/server.js';

export interface QuotaRefusal {
  readonly success: false;
  readonly code: string;
  readonly error: string;
  readonly limit?: string;
  readonly setting?: string;
  readonly retry_after_ms?: number;
}

const dirs: string[] = [];

/** Write `quotas` as a CODEXEC_QUOTAS file; returns its path (removeQuotaFiles removes it). */
export function quotasFile(quotas: unknown): string {
  const dir = tempDir('codexec-quotas-');
  dirs.push(dir);
  const path = join(dir, 'quotas.json');
  writeFileSync(path, typeof quotas === 'string' ? quotas : JSON.stringify(quotas));
  return path;
}

/** Remove every file quotasFile wrote (a suite's afterAll). */
export function removeQuotaFiles(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/**
 * Wait for a fresh UTC minute when less than `needMs` of this one is left: a per-minute count
 * must not be cut in two by the window's edge in the middle of a test.
 */
export async function roomInMinute(needMs: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await sleep(left + 50);
}
