import { z } from 'zod';
import { readJsonFile } from './json-file.js';

const count = (what: string) => z.number().int().min(0).max(1_000_000_000).optional().describe(what);

/** One principal's quotas (or `*`'s): each absent field is no quota of that kind. */
export const quotaSchema = z
  .strictObject({
    max_concurrent_runs: count('Runs of the principal at once (a task counts while its run runs).'),
    max_sessions: count('Sessions of the principal at once, on top of CODEXEC_MAX_SESSIONS.'),
    runs_per_minute: count('Runs admitted in a fixed UTC minute window.'),
    cpu_seconds_per_day: z
      .number()
      .min(0)
      .max(1_000_000_000)
      .optional()
      .describe("CPU seconds the principal's runs may use per UTC day."),
  })
  .describe('Quotas of one principal');

/** The file: principal (or `*`, every principal without an entry) → its quotas. */
export const quotasFileSchema = z.record(z.string().min(1), quotaSchema);

export type Quota = z.infer<typeof quotaSchema>;
export type QuotaTable = Readonly<Record<string, Quota>>;

/** CODEXEC_QUOTAS: read and validated at start-up; a bad file stops it naming the file and field. */
export function readQuotas(path: string): { readonly file: string; readonly table: QuotaTable } {
  const table = readJsonFile(
    'CODEXEC_QUOTAS',
    path,
    quotasFileSchema,
    '{"<principal>|*": {"max_concurrent_runs": N, "max_sessions": N, "runs_per_minute": N, "cpu_seconds_per_day": N}}',
  );
  return { file: path, table };
}
