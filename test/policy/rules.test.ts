import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  BUILTIN_RULES,
  checkRules,
  compileRule,
  decide,
  loadRules,
  loadShellParser,
  type RuleSet,
} from '../../src/policy/index.js';
import { LANGUAGES } from '../../src/runtimes/index.js';
import { SAMPLES } from './samples.js';

const builtins: RuleSet = { rules: BUILTIN_RULES.map(compileRule), source: null };
beforeAll(() => loadShellParser());

describe('built-in rules', () => {
  it('every built-in rule has samples, names its source, and only known languages', () => {
    expect(SAMPLES.map((s) => s.rule).sort()).toEqual(BUILTIN_RULES.map((r) => r.id).sort());
    for (const rule of BUILTIN_RULES) {
      expect(rule.description).toMatch(/\((?:AG2|MassGen|codexec)[^)]*\)$/);
      for (const language of rule.languages) expect(LANGUAGES).toContain(language);
    }
  });

  for (const sample of SAMPLES) {
    it(`${sample.rule} catches its samples and lets the near-misses through`, () => {
      for (const code of sample.caught) {
        expect(checkRules(code, sample.language, builtins)?.rule, code).toBe(sample.rule);
      }
      for (const code of sample.passed) {
        expect(checkRules(code, sample.language, builtins)?.rule, code).toBeUndefined();
      }
    });
  }

  it('a shell rule does not fire on another language', () => {
    expect(checkRules('sudo ls', 'python', builtins)).toBeUndefined();
    expect(checkRules("shutil.rmtree('/')", 'bash', builtins)).toBeUndefined();
  });

  it('the strictest matching rule decides: deny over ask', () => {
    expect(checkRules('sudo rm -rf /', 'bash', builtins)?.rule).toBe('rm-rf-root');
  });
});

describe('decide', () => {
  const policy = (approval: 'auto' | 'ask' | 'risky') => ({
    approval,
    allowedRuntimes: ['python', 'bash'],
    rules: builtins,
  });
  const req = (code: string, language = 'bash') => ({ tool: 'execute_code', language, code });

  it('refuses a runtime that is not allowed, before any rule', () => {
    const d = decide(req('rm -rf /', 'node'), policy('auto'));
    expect(d.kind === 'refuse' && d.error.code).toBe('RUNTIME_NOT_ALLOWED');
  });
  it('deny refuses in every mode, naming the rule', () => {
    for (const mode of ['auto', 'ask', 'risky'] as const) {
      const d = decide(req('rm -rf /'), policy(mode));
      expect(d.kind === 'refuse' && d.error.code).toBe('POLICY_DENIED');
      expect(d.kind === 'refuse' && d.error.message).toContain('rm-rf-root');
    }
  });
  it('auto never asks, an ask rule only names itself; risky asks only for ask rules; ask asks always', () => {
    expect(decide(req('curl -s x | sh'), policy('auto'))).toEqual({
      kind: 'run',
      approvedBy: 'auto',
      rule: 'pipe-to-shell',
    });
    expect(decide(req('ls'), policy('risky'))).toEqual({ kind: 'run', approvedBy: 'auto', rule: null });
    expect(decide(req('curl -s x | sh'), policy('risky'))).toMatchObject({
      kind: 'ask',
      rule: 'pipe-to-shell',
    });
    expect(decide(req('ls'), policy('ask'))).toMatchObject({ kind: 'ask', rule: null });
  });
});

describe('policy.json', () => {
  let home: string;
  afterEach(() => rmSync(home, { recursive: true, force: true }));
  const write = (value: unknown) => {
    home = mkdtempSync(join(tmpdir(), 'codexec-policy-'));
    writeFileSync(join(home, 'policy.json'), typeof value === 'string' ? value : JSON.stringify(value));
    return { home };
  };

  it('overrides built-in actions and adds extra rules', () => {
    const set = loadRules(
      write({
        rules: { chmod: 'deny', 'rm-rf-root': 'allow' },
        extra: [{ id: 'no-curl', pattern: '\\bcurl\\b', languages: ['bash'], action: 'deny' }],
      }),
    );
    expect(set.source).toBe(join(home, 'policy.json'));
    expect(checkRules('chmod +x a', 'bash', set)).toMatchObject({ rule: 'chmod', action: 'deny' });
    expect(checkRules('rm -rf /', 'bash', set)).toMatchObject({ rule: 'rm-rf-root', action: 'allow' });
    expect(checkRules('curl https://x', 'bash', set)).toMatchObject({ rule: 'no-curl', action: 'deny' });
  });

  it('no file means the built-ins', () => {
    home = mkdtempSync(join(tmpdir(), 'codexec-policy-'));
    expect(loadRules({ home })).toMatchObject({ source: null });
    expect(loadRules({ home }).rules).toHaveLength(BUILTIN_RULES.length);
  });

  it.each([
    ['not JSON', '{', /policy\.json: not valid JSON/],
    ['an unknown rule id', { rules: { nope: 'deny' } }, /policy\.json: rules: unknown built-in rule nope/],
    ['a bad action', { rules: { sudo: 'block' } }, /policy\.json: rules\.sudo: /],
    [
      'a bad regex',
      { extra: [{ id: 'x', pattern: '(', action: 'deny' }] },
      /rule x: pattern is not a valid regex/,
    ],
    ['an unknown key', { rule: {} }, /policy\.json: /],
    [
      'an extra rule reusing a built-in id',
      { extra: [{ id: 'sudo', pattern: 'x', action: 'deny' }] },
      /built-in/,
    ],
  ])('a file with %s is a ConfigError naming the file', (_what, content, message) => {
    expect(() => loadRules(write(content))).toThrow(message);
  });
});
