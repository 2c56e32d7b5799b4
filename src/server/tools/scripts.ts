import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { ExecutionRequest, ExecutionResult, RunOptions } from '../../engine/index.js';
import { CodexecError } from '../../errors/index.js';
import {
  isNoScript,
  noScript,
  type ScriptMetadata,
  type ScriptStore,
  searchScripts,
} from '../../library/index.js';
import { findMissingPackages } from '../../packages/index.js';
import { executeCodeResultSchema } from '../../results/index.js';
import { LANGUAGES } from '../../runtimes/index.js';
import { currentPrincipal } from '../../util/index.js';
import { discovers } from '../codemode.js';
import { defineTool } from '../define-tool.js';
import { egressInput } from '../egress.js';
import { type Gatekeeper, runFacts } from '../guard.js';
import { withProgress } from '../progress.js';
import { runContent } from '../resources.js';
import { savedHelp } from '../saved-output.js';
import type { Services } from '../services.js';
import { RUN_TEXT } from '../text.js';
import { advertisedArguments } from './arguments.js';
import { languageInput } from './languages.js';

const name = z.string().min(1).max(200).describe('letters, digits, - and _');
const tagList = z.array(z.string().min(1).max(64)).max(32);
const summary = z.object({
  name: z.string(),
  description: z.string(),
  language: z.enum(LANGUAGES),
  tags: z.array(z.string()),
  last_run_at: z.string().nullable(),
});
const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const runScriptInput = z.object({
  name,
  args: z.array(z.string().max(100_000)).max(1000).default([]),
  timeout_ms: z.number().int().positive().optional(),
  working_dir: z
    .string()
    .min(1)
    .optional()
    .describe('An existing directory beneath CODEXEC_ALLOWED_PATHS to run in. Default: a fresh workspace'),
  ...egressInput,
});

/** The script library's tools: each on its own, over the caller's own library. */
export function registerScriptTools(server: McpServer, services: Services, gate: Gatekeeper): void {
  registerSaveScript(server, services);
  registerGetScript(server, services);
  registerListScripts(server, services);
  registerSearchScripts(server, services);
  // run_script runs code: it exists only while CODEXEC_ENABLED is true.
  if (services.config.gate.enabled) registerRunScript(server, services, gate);
}

/** The caller's own library (serve --http: its bearer token's principal); no tool names another. */
function mine(services: Services): ScriptStore {
  return services.scripts.of(currentPrincipal());
}

/** A script of the caller's; a name it has none under is refused with the nearest it has. */
async function scriptOf(scripts: ScriptStore, name: string, version?: number) {
  try {
    return await scripts.get(name, version);
  } catch (error) {
    if (!isNoScript(error)) throw error;
    throw noScript(
      name,
      (await scripts.list()).map((script) => script.name),
    );
  }
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
    input: z.object({
      name,
      description: z.string().min(1).max(4000).describe('What it does and how to call it'),
      language: languageInput,
      code: z.string().min(1).describe(`At most ${maxScriptBytes} UTF-8 bytes`),
      tags: tagList.default([]),
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
    input: z.object({ name, version: z.number().int().positive().optional() }),
    text: { plain: ['code'] },
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
    input: z.object({ language: languageInput.optional(), tag: z.string().min(1).optional() }),
    output: z.object({ scripts: z.array(summary), total_count: z.number().int() }),
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
    input: z.object({
      query: z.string().min(1).max(500),
      limit: z.number().int().min(1).max(100).default(10),
    }),
    output: z.object({
      results: z.array(
        summary.extend({
          relevance: z.enum(['name_match', 'tag_match', 'description_match', 'language_match']),
          matched: z.array(z.string()),
          score: z.number(),
        }),
      ),
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

function registerRunScript(server: McpServer, services: Services, gate: Gatekeeper): void {
  defineTool(server, {
    name: 'run_script',
    title: 'Run a saved script',
    description:
      'Run a saved script as execute_code would, args as its command-line arguments; refused, naming it, ' +
      `when a package it needs is not installed. ${savedHelp(services.config)}`,
    input: runScriptInput,
    advertisedInput: advertisedArguments(runScriptInput, services),
    output: executeCodeResultSchema,
    text: RUN_TEXT,
    tasks: services.tasks,
    extraContent: runContent,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    handler: async (args, ctx) => {
      const scripts = mine(services);
      const { metadata, code } = await scriptOf(scripts, args.name);
      const missing = await findMissingPackages(metadata.language, metadata.packages, services.packageCheck);
      if (missing.length > 0) {
        const tool = metadata.language === 'python' ? 'python' : 'node';
        throw new CodexecError(
          'PACKAGES_MISSING',
          `script ${args.name} needs packages that are not installed: ${missing.join(', ')}. Install them first ` +
            `with install_package (language "${tool}", no session_id), then run it again.`,
        );
      }
      const workingDir = args.working_dir
        ? services.hostDirs.open(args.working_dir, 'working_dir')
        : undefined;
      const attempt = { tool: 'run_script', language: metadata.language, code, sessionId: null };
      try {
        return await gate.run(
          ctx,
          attempt,
          () =>
            withProgress(ctx, async (options) => {
              const result = await runSaved(services, { metadata, code }, args, options, {
                workingDir,
                askEgress: gate.egressAsker(ctx, 'run_script', null),
              });
              await scripts.recordRun(args.name, result.success);
              return result;
            }),
          runFacts,
        );
      } finally {
        workingDir?.close();
      }
    },
  });
}

/** One run of a saved script through the engine, with code mode's discovery where it applies. */
async function runSaved(
  services: Services,
  { metadata, code }: { metadata: ScriptMetadata; code: string },
  args: z.output<typeof runScriptInput>,
  options: RunOptions,
  { workingDir, askEgress }: Pick<ExecutionRequest, 'workingDir' | 'askEgress'>,
): Promise<ExecutionResult> {
  // Code mode's discovery, where downstream servers are configured (no call allowed).
  const ended = new AbortController();
  const bridge = discovers(services, metadata.language)
    ? services.bridge.openRun({ allowedTools: [], signal: ended.signal })
    : undefined;
  try {
    return await services.engine.run(
      {
        language: metadata.language,
        code,
        timeoutMs: args.timeout_ms,
        workingDir,
        args: args.args,
        scriptName: metadata.name,
        allowedDomains: args.allowed_domains,
        askEgress,
        bridge,
      },
      options,
    );
  } finally {
    ended.abort(new Error('the run ended'));
  }
}

function toSummary(s: z.infer<typeof summary>) {
  return {
    name: s.name,
    description: s.description,
    language: s.language,
    tags: s.tags,
    last_run_at: s.last_run_at,
  };
}
