import type { AuditReport, AuditRow } from '../audit/index.js';
import type { Services } from '../server/index.js';

const MAX_ENTRIES = 100;

/**
 * The newest entries `principal` may see (undefined: all), newest first: from the newest audit
 * file, or with a postgres store from every replica's chain. Entries written before they named a
 * principal show to admins only.
 */
export function recentAudit(services: Services, principal: string | undefined): Promise<AuditRow[]> {
  return services.audit.recent(principal, MAX_ENTRIES);
}

/** `codexec audit verify` for the page: the whole trail (every chain on postgres), read in full. */
export function verifyTrail(services: Services): Promise<AuditReport> {
  return services.audit.verify();
}
