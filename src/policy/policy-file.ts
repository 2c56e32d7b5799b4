import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { Config } from '../config/index.js';
import { ConfigError } from '../errors/index.js';
import { BUILTIN_RULES } from './builtin-rules.js';
import { compileRule, RULE_ACTIONS, RULE_LANGUAGES, type RuleSet, type RuleSpec } from './rules.js';

/** policy.json's schema, made for each read (once, at start) and let go: most servers have no file. */
const policyFile = () => {
  const action = z.enum(RULE_ACTIONS);
  const extraRule = z.strictObject({
    id: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'ids are lowercase letters, digits, . _ -'),
    description: z.string().min(1).max(500).default('user rule from policy.json'),
    languages: z
      .array(z.enum(RULE_LANGUAGES))
      .min(1)
      .default([...RULE_LANGUAGES]),
    pattern: z.string().min(1).max(2000),
    action,
  });
  return z.strictObject({
    rules: z.record(z.string(), action).default({}),
    extra: z.array(extraRule).max(500).default([]),
  });
};

/** `$CODEXEC_HOME/policy.json`: overrides of built-in rule actions, and extra rules. */
export function policyPath(config: Pick<Config, 'home'>): string {
  return join(config.home, 'policy.json');
}

/**
 * The rules a server runs with: the built-ins, with policy.json's overrides and extras applied.
 * A missing file means built-ins only; a bad one throws ConfigError naming the file and the fault.
 */
export function loadRules(config: Pick<Config, 'home'>): RuleSet {
  const path = policyPath(config);
  const raw = readJson(path);
  if (raw === undefined) return { rules: BUILTIN_RULES.map(compileRule), source: null };
  const parsed = policyFile().safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join('.') : 'file';
    throw new ConfigError(`${path}: ${where}: ${issue?.message ?? 'invalid'}`);
  }
  const { rules: overrides, extra } = parsed.data;
  const known = new Set(BUILTIN_RULES.map((rule) => rule.id));
  const unknown = Object.keys(overrides).filter((id) => !known.has(id));
  if (unknown.length > 0) {
    throw new ConfigError(
      `${path}: rules: unknown built-in rule ${unknown.join(', ')} (known: ${[...known].join(', ')})`,
    );
  }
  const clash = extra.find((rule) => known.has(rule.id));
  if (clash)
    throw new ConfigError(`${path}: extra: id ${clash.id} is a built-in rule; override it in "rules"`);
  const specs: RuleSpec[] = [
    ...BUILTIN_RULES.map((rule) => ({ ...rule, action: overrides[rule.id] ?? rule.action })),
    ...extra,
  ];
  return { rules: specs.map((spec) => compileChecked(spec, path)), source: path };
}

function compileChecked(spec: RuleSpec, path: string) {
  try {
    return compileRule(spec);
  } catch (error) {
    throw new ConfigError(
      `${path}: extra: rule ${spec.id}: pattern is not a valid regex (${(error as Error).message})`,
    );
  }
}

function readJson(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError(`${path}: cannot read (${(error as Error).message})`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${path}: not valid JSON (${(error as Error).message})`);
  }
}
