// The working_dir field of the tools that run code, as tools/list shows it: only where the
// operator opened host directories (CODEXEC_ALLOWED_PATHS), naming them; elsewhere it would only
// be refused, so it is left out (a call that passes it anyway is refused, naming the setting).
import { z } from 'zod';
import type { Config } from '../config/index.js';

export function advertisedWorkingDir(schema: z.ZodObject, config: Pick<Config, 'command'>): z.ZodObject {
  const roots = config.command.allowedPaths;
  if (roots.length === 0) return schema.omit({ working_dir: true } as never);
  return schema.extend({
    working_dir: z
      .string()
      .min(1)
      .optional()
      .describe(
        `An existing directory beneath ${roots.join(', ')} to run in (absolute; ~ allowed), as its owner; ` +
          "not inside or around another live run's or session's. Default: a fresh empty workspace",
      ),
  });
}
