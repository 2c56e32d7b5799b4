import type { QuotaLimit } from '../errors/index.js';
import { recordQuotaRefusal } from '../metrics/index.js';
import { log } from '../util/index.js';

/**
 * Every QUOTA_EXCEEDED refusal passes here, once, before it is thrown: logged, and counted in
 * codexec_quota_refusals_total{limit} where the server serves metrics.
 */
export function onQuotaRefusal(limit: QuotaLimit): void {
  log('debug', `quota refusal: ${limit}`);
  recordQuotaRefusal(limit);
}
