// A tool's arguments as tools/list shows them under this server's settings: what a feature that is
// off would only refuse is left out, and a limit is stated where it binds.
import { z } from 'zod';
import { advertisedCodeMode } from '../codemode.js';
import { advertisedEgress } from '../egress.js';
import { advertisedWorkingDir } from '../host-dirs.js';
import type { Services } from '../services.js';

/**
 * `schema` as clients are shown it: `working_dir` only with CODEXEC_ALLOWED_PATHS, `allowed_domains`
 * only under the allowlist, `allowed_tools` only with downstream servers; a timeout names its cap.
 */
export function advertisedArguments(
  schema: z.ZodObject,
  services: Pick<Services, 'config'> & { readonly bridge: { readonly configured: boolean } },
): z.ZodObject {
  const { config } = services;
  const shape = schema.shape;
  let shown = schema;
  if ('working_dir' in shape) shown = advertisedWorkingDir(shown, config);
  if ('allowed_domains' in shape) shown = advertisedEgress(shown as never, config);
  if ('allowed_tools' in shape) shown = advertisedCodeMode(shown, services);
  if ('timeout_ms' in shape)
    shown = shown.extend({
      timeout_ms: z
        .number()
        .int()
        .positive()
        .optional()
        .describe(
          `Wall-clock limit in ms (default ${config.defaultTimeoutMs}, at most ${config.maxTimeoutMs})`,
        ),
    });
  return shown;
}
