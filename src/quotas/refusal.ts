import type { QuotaLimit } from '../errors/index.js';
import { log } from '../util/index.js';

/**
 * Every QUOTA_EXCEEDED refusal passes here, once, before it is thrown: the one place a metrics
 * counter (quota refusals by limit) hooks in.
 */
export function onQuotaRefusal(limit: QuotaLimit): void {
  log('debug', `quota refusal: ${limit}`);
}
