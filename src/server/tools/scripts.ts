import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { type ScriptMetadata, searchScripts } from '../../library/index.js';
import { LANGUAGES } from '../../runtimes/index.js';
import { defineTool } from '../define-tool.js';
import type { Gatekeeper } from '../guard.js';
import type { Services } from '../services.js';
import { languageInput } from './languages.js';
import { mine, scriptName, scriptOf } from './library.js';
import { registerRunScript } from './run-script.js';

const tagList = () => z.array(z.string().min(1).max(64)).max(32);
const summary = () =>
  z.object({
    name: z.string(),
    description: z.string(),
    language: z.enum(LANGUAGES),
    tags: z.array(z.string()),
    last_run_at: z.string().nullable(),
  });
const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

/** The script library's tools: each on its own, over the caller's own library. */
export function registerScriptTools(server: McpServer, services: Services, gate: Gatekeeper): void {
  registerSaveScript(server, services);
  registerGetScript(server, services);
  registerListScripts(server, services);
  registerSearchScripts(server, services);
  // run_script runs code: it exists only while CODEXEC_ENABLED is true.
  if (services.config.gate.enabled) registerRunScript(server, services, gate);
}

function registerSaveScript(server: McpServer, services: Services): void {
  const { maxVersions, maxScriptBytes } = services.config.scriptLimits;
  defineTool(server, {
    name: 'save_script',
    title: 'Save a script',
    description:
      'Save working, tested code under a name to find and run it later ("parse it like last time"). Saving ' +
      `a name again keeps the earlier version (${maxVersions} per script). Describe what it does and its ` +
      'arguments; list the packages it needs.',
    schemas: () => ({
      input: z.object({
        name: scriptName(),
        description: z.string().min(1).max(4000).describe('What it does and how to call it'),
        language: languageInput(),
        code: z.string().min(1).describe(`At most ${maxScriptBytes} UTF-8 bytes`),
        tags: tagList().default([]),
        packages: z.array(z.string().min(1).max(214)).max(64).default([]).describe('pip / npm names'),
        source_execution_id: z
          .string()
          .regex(/^exec_[0-9a-f]{12}$/)
          .optional(),
      }),
      output: z.object({
        success: z.literal(true),
        script_id: z.string(),
        name: z.string(),
        path: z.string(),
        version: z.number().int(),
        saved_at: z.string(),
        pruned_versions: z
          .number()
          .int()
          .describe('Earlier versions this save removed (CODEXEC_MAX_SCRIPT_VERSIONS)'),
      }),
    }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    handler: async (args) => {
      const saved = await mine(services).save({ ...args, sourceExecutionId: args.source_execution_id });
      const { metadata } = saved;
      return {
        success: true as const,
        script_id: metadata.script_id,
        name: metadata.name,
        path: saved.path,
        version: metadata.version,
        saved_at: metadata.updated_at,
        pruned_versions: saved.pruned,
      };
    },
  });
}

function registerGetScript(server: McpServer, services: Services): void {
  defineTool(server, {
    name: 'get_script',
    title: 'Get a saved script',
    description:
      'A saved script: code, description, tags, packages, run history; version for an earlier one.',
    schemas: () => ({
      input: z.object({ name: scriptName(), version: z.number().int().positive().optional() }),
      output: z.object({
        success: z.literal(true),
        name: z.string(),
        description: z.string(),
        language: z.enum(LANGUAGES),
        code: z.string(),
        tags: z.array(z.string()),
        packages: z.array(z.string()),
        created_at: z.string(),
        updated_at: z.string(),
        last_run_at: z.string().nullable(),
        run_count: z.number().int(),
        last_run_success: z.boolean().nullable(),
        source_execution_id: z.string().nullable(),
        version: z.number().int().describe('current version'),
        code_version: z.number().int().describe('version of the code returned'),
        earlier_versions: z.number().int(),
      }),
    }),
    text: { plain: ['code'] },
    annotations: readOnly,
    handler: async (args) => {
      const scripts = mine(services);
      const stored = await scriptOf(scripts, args.name, args.version);
      const { script_id: _id, ...metadata } = stored.metadata;
      return {
        success: true as const,
        ...metadata,
        code: stored.code,
        code_version: args.version ?? metadata.version,
        earlier_versions: await scripts.versionCount(args.name),
      };
    },
  });
}

function registerListScripts(server: McpServer, services: Services): void {
  defineTool(server, {
    name: 'list_scripts',
    title: 'List saved scripts',
    description: 'List saved scripts, optionally only one language or one tag.',
    schemas: () => ({
      input: z.object({ language: languageInput().optional(), tag: z.string().min(1).optional() }),
      output: z.object({ scripts: z.array(summary()), total_count: z.number().int() }),
    }),
    annotations: readOnly,
    handler: async (args) => {
      const all = await mine(services).list();
      const chosen = all.filter(
        (s: ScriptMetadata) =>
          (!args.language || s.language === args.language) && (!args.tag || s.tags.includes(args.tag)),
      );
      return { scripts: chosen.map(toSummary), total_count: chosen.length };
    },
  });
}

function registerSearchScripts(server: McpServer, services: Services): void {
  defineTool(server, {
    name: 'search_scripts',
    title: 'Search saved scripts',
    description:
      'Find saved scripts by words in their name, tags and description ("excel parsing"), best first.',
    schemas: () => ({
      input: z.object({
        query: z.string().min(1).max(500),
        limit: z.number().int().min(1).max(100).default(10),
      }),
      output: z.object({
        results: z.array(
          summary().extend({
            relevance: z.enum(['name_match', 'tag_match', 'description_match', 'language_match']),
            matched: z.array(z.string()),
            score: z.number(),
          }),
        ),
      }),
    }),
    annotations: readOnly,
    handler: async (args) => {
      const hits = searchScripts(await mine(services).list(), args.query).slice(0, args.limit);
      return {
        results: hits.map((hit) => ({
          ...toSummary(hit.metadata),
          relevance: hit.relevance,
          matched: hit.matched,
          score: Math.round(hit.score * 100) / 100,
        })),
      };
    },
  });
}

function toSummary(s: z.infer<ReturnType<typeof summary>>) {
  return {
    name: s.name,
    description: s.description,
    language: s.language,
    tags: s.tags,
    last_run_at: s.last_run_at,
  };
}
