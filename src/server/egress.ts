// The egress allowlist's input field of the tools that run code: a call may narrow the hosts its
// code reaches (the result's `network_denied` is in results/).
import { z } from 'zod';
import type { Config } from '../config/index.js';

/** A call's own `allowed_domains`: narrows the server's CODEXEC_ALLOWED_DOMAINS, never widens it. */
export const egressInput = () => ({
  allowed_domains: z
    .array(z.string().min(1).max(255))
    .max(64)
    .optional()
    .describe(
      'With CODEXEC_NETWORK=allowlist: the hosts this code may reach, a subset of the server list ' +
        '(names, *.name wildcards, IP literals, optional :port); default: the whole server list',
    ),
});

/**
 * A tool's advertised input without `allowed_domains` where the network is not the allowlist (it
 * would only be refused there): fewer words in every tools/list.
 */
export function advertisedEgress<T extends z.ZodObject<ReturnType<typeof egressInput> & z.ZodRawShape>>(
  schema: T,
  config: Pick<Config, 'network'>,
): z.ZodObject {
  return config.network === 'allowlist' ? schema : schema.omit({ allowed_domains: true } as never);
}
