import { z } from 'zod';
import { LANGUAGES } from '../runtimes/index.js';
import { lazily } from '../util/index.js';

/**
 * `metadata.json` of one script: the source of truth (index.json is derived from these). Made on
 * first use, as the index's schema: an idle server that reads no script holds neither.
 */
export const scriptMetadataSchema = lazily(() =>
  z.object({
    script_id: z.string(),
    name: z.string(),
    description: z.string(),
    language: z.enum(LANGUAGES),
    tags: z.array(z.string()),
    packages: z.array(z.string()),
    created_at: z.string(),
    updated_at: z.string(),
    last_run_at: z.string().nullable(),
    run_count: z.number().int().nonnegative(),
    last_run_success: z.boolean().nullable(),
    source_execution_id: z.string().nullable(),
    /** Current version number (1 for a new script); earlier ones live in versions/<n>.<ext>. */
    version: z.number().int().positive(),
  }),
);

export type ScriptMetadata = z.infer<ReturnType<typeof scriptMetadataSchema>>;

/**
 * `index.json`: the seed's index (every script's metadata) plus, per name, the identity of the
 * metadata.json each entry was read from, so a reader knows which entries to read again.
 */
export const scriptIndexSchema = lazily(() =>
  z.object({
    version: z.literal(1),
    scripts: z.array(scriptMetadataSchema()),
    stamps: z.record(z.string(), z.string()).optional(),
  }),
);

export type ScriptIndex = z.infer<ReturnType<typeof scriptIndexSchema>>;

export interface SaveScriptInput {
  readonly name: string;
  readonly description: string;
  readonly language: ScriptMetadata['language'];
  readonly code: string;
  readonly tags: readonly string[];
  readonly packages: readonly string[];
  readonly sourceExecutionId?: string | undefined;
}

export interface StoredScript {
  readonly metadata: ScriptMetadata;
  readonly code: string;
  readonly path: string;
}

export interface SavedScript extends StoredScript {
  /** Earlier versions this save removed (CODEXEC_MAX_SCRIPT_VERSIONS). */
  readonly pruned: number;
}

/** Bounds of one principal's library. */
export interface LibraryLimits {
  /** Versions a script keeps, the current one included (1: no earlier ones). */
  readonly maxVersions: number;
  /** Largest code one save accepts, in UTF-8 bytes. */
  readonly maxScriptBytes: number;
}
