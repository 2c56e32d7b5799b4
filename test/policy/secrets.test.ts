import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { OutputCollector } from '../../src/engine/index.js';
import {
  createSecretsFilter,
  envSecrets,
  SecretsFilter,
  type StreamRedactor,
} from '../../src/policy/index.js';

// Fake secrets of every shape, built from parts so no scanner mistakes this file for a leak.
const alnum = (n: number, seed = 7) =>
  Array.from({ length: n }, (_, i) => 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789'[(i * seed) % 36]).join('');
const SHAPES: Record<string, string> = {
  openai: `sk-${alnum(24)}`,
  openaiProject: `sk-proj-${alnum(40)}_${alnum(8, 5)}`,
  anthropic: `sk-ant-api03-${alnum(60)}-${alnum(10, 11)}AA`,
  githubClassic: `ghp_${alnum(36)}`,
  githubFineGrained: `github_pat_11${alnum(20)}_${alnum(59, 5)}`,
  aws: `AKIA${alnum(16).toUpperCase()}`,
  slack: `xoxb-1234567890-${alnum(24)}`,
  jwt: ['eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9', 'eyJzdWIiOiIxMjM0NTY3ODkwIn0', alnum(43, 5)].join('.'),
  pem: `-----BEGIN RSA PRIVATE KEY-----\n${alnum(64)}\n${alnum(64, 5)}\n${alnum(20, 11)}==\n-----END RSA PRIVATE KEY-----`,
};
const URL_PASSWORD = `pa55${alnum(8)}`;
const URL = `postgres://admin:${URL_PASSWORD}@db.example.com:5432/app`;
const ENV_VALUE = 'hunter2-but-longer';
const FILE_VALUE = 'correct horse battery staple';

const filter = new SecretsFilter({ values: [ENV_VALUE, FILE_VALUE] });

/** Write `parts` through a fresh stream of `f` and end it. */
function through(parts: readonly string[], f: SecretsFilter = filter): string {
  const stream = f.stream();
  return parts.map((part) => stream.write(part)).join('') + stream.end();
}

describe('SecretsFilter.redact', () => {
  it.each(Object.entries(SHAPES))('masks a %s whole', (_, secret) => {
    expect(filter.redact(`before ${secret} after`)).toBe('before *** after');
  });

  it('masks only the password of scheme://user:pass@host', () => {
    expect(filter.redact(`db at ${URL}\n`)).toBe('db at postgres://admin:***@db.example.com:5432/app\n');
    expect(filter.redact('redis://:s3cretpw@cache:6379')).toBe('redis://:***@cache:6379');
  });

  it('masks listed values wherever they appear', () => {
    expect(filter.redact(`x${ENV_VALUE}y ${FILE_VALUE}.`)).toBe('x***y ***.');
  });

  it('leaves look-alikes alone', () => {
    const plain = [
      'tasks-abcdefghijklmnopqrstuvwxyz0123', // sk- glued to a word
      'sk-short',
      `ghp_${alnum(20)}`, // too short for a GitHub token
      `XAKIA${alnum(16).toUpperCase()}`, // inside a longer word
      'eyJhbGciOiJIUzI1NiJ9 alone',
      'https://example.com:8080/path',
      'mailto:someone@example.com',
      '-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----',
      'hunter2 and correct horse',
    ].join('\n');
    expect(filter.redact(plain)).toBe(plain);
  });

  it('prefers the longer of two values that start alike', () => {
    const f = new SecretsFilter({ values: ['abcdefgh', 'abcdefgh-and-more'] });
    expect(f.redact('abcdefgh-and-more!')).toBe('***!');
    expect(f.redact('abcdefgh-and-less')).toBe('***-and-less');
  });
});

/** Where a listed value's blind part ends: half of it, at least 8 characters (filter.ts). */
const blind = (value: string) => Math.max(8, Math.ceil(value.length / 2));

describe('StreamRedactor', () => {
  const cases = { ...SHAPES, url: URL };
  const values = { envValue: ENV_VALUE, fileValue: FILE_VALUE };

  it.each(Object.entries(cases))('masks a %s split across two writes at every position', (_, secret) => {
    const text = `out: ${secret}\nnext line\n`;
    const whole = filter.redact(text);
    expect(whole).not.toBe(text);
    for (let at = 0; at <= text.length; at++) {
      const out = through([text.slice(0, at), text.slice(at)]);
      expect(out, `split at ${at}`).toBe(whole);
    }
  });

  it.each(Object.entries(values))(
    'masks a listed %s split across two writes anywhere but in its blind first half',
    (_, secret) => {
      const text = `out: ${secret}\nnext line\n`;
      const start = text.indexOf(secret);
      for (let at = 0; at <= text.length; at++) {
        if (at > start && at < start + blind(secret)) continue;
        expect(through([text.slice(0, at), text.slice(at)]), `split at ${at}`).toBe('out: ***\nnext line\n');
      }
    },
  );

  it.each(Object.entries(cases))('masks a %s written one character at a time', (_, secret) => {
    const text = `[${secret}]`;
    expect(through([...text])).toBe(filter.redact(text));
  });

  it('tells a reader of a live stream nothing of a listed value it has not guessed half of', () => {
    // A probe of a live stream (read_process_output): what is held back would say whether the
    // probe's end starts the value. Below half of it, nothing is held, right or wrong.
    const secret = 'Zq7-4fT9xWp2Lm8RkV3n';
    const f = new SecretsFilter({ values: [secret], patterns: [] });
    for (let known = 1; known < blind(secret); known++) {
      const right = f.stream().write(`probe Q${secret.slice(0, known)}`);
      const wrong = f.stream().write(`probe Q${secret.slice(0, known - 1)}#`);
      expect(right).toBe(`probe Q${secret.slice(0, known)}`);
      expect(wrong).toBe(`probe Q${secret.slice(0, known - 1)}#`);
    }
    // From half of it on, a possible rest is held (a secret split across writes is still masked).
    expect(f.stream().write(`probe Q${secret.slice(0, blind(secret))}`)).toBe('probe Q');
  });

  it('masks a secret split across three writes and across lines of other output', () => {
    const text = `a\n${SHAPES.githubClassic} b ${ENV_VALUE}\n`;
    const whole = filter.redact(text);
    const value = text.indexOf(ENV_VALUE);
    const inBlindPart = (at: number) => at > value && at < value + blind(ENV_VALUE);
    for (let i = 1; i < text.length - 1; i += 3) {
      for (let j = i + 1; j < text.length; j += 5) {
        if (inBlindPart(i) || inBlindPart(j)) continue;
        expect(through([text.slice(0, i), text.slice(i, j), text.slice(j)])).toBe(whole);
      }
    }
  });

  it('finds a value that starts inside a false start of it (overlapping candidates)', () => {
    const f = new SecretsFilter({ values: ['ababab-c1234567890'] });
    const text = 'xxabababab-c1234567890yy';
    for (let at = 0; at <= text.length; at++) {
      if (at > 4 && at < 4 + blind('ababab-c1234567890')) continue;
      expect(through([text.slice(0, at), text.slice(at)], f)).toBe('xxab***yy');
    }
  });

  it('passes ordinary output on at once and holds back only a possible start', () => {
    const stream = filter.stream();
    expect(stream.write('hello world\n')).toBe('hello world\n');
    expect(stream.write('x'.repeat(100_000))).toBe('x'.repeat(100_000));
    // "hunter2-b" (half of ENV_VALUE and more) may start it; everything before it goes on now,
    // and "hunt" alone (less than half) is held by nothing.
    expect(stream.write('\nkey: hunt')).toBe('\nkey: hunt');
    expect(stream.write('\nkey: hunter2-b')).toBe('\nkey: ');
    expect(stream.write('ig season\n')).toBe('hunter2-big season\n');
    expect(stream.write('token sk-')).toBe('token ');
    expect(stream.end()).toBe('sk-');
  });

  it('holds back at most the longest possible match, however the text is cut', () => {
    // Pseudo-random output full of near-misses (s, sk-, -----, ://, eyJ …) and no secret.
    const alphabet = [
      's',
      'k',
      '-',
      'e',
      'y',
      'J',
      ':',
      '/',
      'a',
      'Z',
      '9',
      ' ',
      '\n',
      '.',
      'A',
      'I',
      'x',
      'o',
      'g',
      'h',
      '_',
      '@',
    ];
    let seed = 42;
    const next = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    const stream = filter.stream();
    let written = 0;
    let passed = 0;
    let held = 0;
    for (let i = 0; i < 3000; i++) {
      const chunk = Array.from({ length: 1 + (next() % 300) }, () => alphabet[next() % alphabet.length]).join(
        '',
      );
      written += chunk.length;
      passed += stream.write(chunk).length;
      held = Math.max(held, written - passed);
    }
    passed += stream.end().length;
    expect(held).toBeLessThanOrEqual(filter.maxLength);
    // No secret in it (or one masked): a mask shortens the text, so the total tells.
    expect(passed).toBeLessThanOrEqual(written);
  });

  it('lets an unfinished PEM block go once it is longer than any key could be', () => {
    const stream = filter.stream();
    const head = '-----BEGIN PRIVATE KEY-----\n';
    let passed = stream.write(head).length;
    for (let i = 0; i < 400; i++) passed += stream.write(`${'x'.repeat(99)}\n`).length;
    expect(passed).toBeGreaterThan(40_000 + head.length - filter.maxLength - 1);
  });

  it('keeps multi-byte characters around secrets whole, split at every byte', () => {
    const text = `é🙂${ENV_VALUE}🙂ü ${SHAPES.openai}日本\n`;
    const bytes = Buffer.from(text);
    const expected = 'é🙂***🙂ü ***日本\n';
    const value = Buffer.byteLength(`é🙂`);
    for (let at = 0; at <= bytes.length; at++) {
      if (at > value && at < value + blind(ENV_VALUE)) continue; // the value's blind half (ASCII)
      const collector = new OutputCollector({ maxChars: 10_000, head: 5000, tail: 5000 }, filter.stream());
      let streamed = collector.push(bytes.subarray(0, at)) + collector.push(bytes.subarray(at));
      streamed += collector.flush();
      expect(streamed, `split at byte ${at}`).toBe(expected);
      expect(streamed).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/); // no lone high surrogate
      expect(collector.finish().text).toBe(expected);
    }
  });

  it('masks a value made of multi-byte characters split inside a character', () => {
    const secret = 'пароль-🙂-секрет';
    const f = new SecretsFilter({ values: [secret] });
    const bytes = Buffer.from(`a ${secret} b`);
    // From the end of its blind half (in bytes; half of its 16 UTF-16 units ends inside the emoji,
    // which the filter takes whole) on: a split there, even inside a character.
    const from = 2 + Buffer.byteLength('пароль-🙂');
    for (let at = from; at <= bytes.length; at++) {
      const collector = new OutputCollector({ maxChars: 1000, head: 500, tail: 500 }, f.stream());
      collector.push(bytes.subarray(0, at));
      collector.push(bytes.subarray(at));
      expect(collector.finish().text).toBe('a *** b');
    }
  });

  it('takes 50 MB of output through in 64 KB writes, all of it passed on', () => {
    const line = 'INFO 2024-05-01T12:00:00Z worker=3 item=12345 status=ok path=/srv/app/data.csv\n';
    const chunk = line.repeat(Math.ceil(65_536 / line.length)).slice(0, 65_536);
    const stream: StreamRedactor = filter.stream();
    let passed = 0;
    const total = 50 * 1024 * 1024;
    for (let written = 0; written < total; written += chunk.length) passed += stream.write(chunk).length;
    passed += stream.end().length;
    expect(passed).toBe(Math.ceil(total / chunk.length) * chunk.length);
  });
});

describe('secrets sources', () => {
  it('takes values of 8 characters or more from variables named like secrets', () => {
    const env = {
      OPENAI_API_KEY: 'sk-fake-value-1',
      github_token: 'lowercase-name-ok',
      DB_PASSWORD: 'p4ssw0rd!',
      MY_PASSWD: 'another-one',
      AWS_CREDENTIALS: 'credential-file',
      BASIC_AUTH: 'user:secretpw',
      CLIENT_SECRET: 'short', // too short
      PATH: '/usr/local/bin:/usr/bin',
      HOME: '/home/someone',
    };
    expect(envSecrets(env).sort()).toEqual(
      [
        'sk-fake-value-1',
        'lowercase-name-ok',
        'p4ssw0rd!',
        'another-one',
        'credential-file',
        'user:secretpw',
      ].sort(),
    );
  });

  it('builds no filter when redaction is off', () => {
    expect(createSecretsFilter({ redact: false, values: ['whatever-value'] }, {})).toBeUndefined();
    const on = createSecretsFilter({ redact: true, values: ['from-the-file'] }, { X_TOKEN: 'from-the-env' });
    expect(on?.redact('from-the-file from-the-env')).toBe('*** ***');
  });
});

describe('secrets settings', () => {
  const home = mkdtempSync(join(tmpdir(), 'codexec-secrets-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('redacts by default and reads the secrets file, one value a line', () => {
    const file = join(home, 'secrets.txt');
    writeFileSync(file, `first-secret\n\n  second secret  \r\n\n`);
    const config = loadConfig({ CODEXEC_HOME: home, CODEXEC_SECRETS_FILE: file });
    expect(config.secrets).toEqual({ redact: true, file, values: ['first-secret', 'second secret'] });
  });

  it('turns off with CODEXEC_REDACT_SECRETS=false and refuses other values', () => {
    expect(loadConfig({ CODEXEC_HOME: home, CODEXEC_REDACT_SECRETS: 'false' }).secrets.redact).toBe(false);
    expect(() => loadConfig({ CODEXEC_HOME: home, CODEXEC_REDACT_SECRETS: 'maybe' })).toThrow(
      /^CODEXEC_REDACT_SECRETS: /,
    );
  });

  it('stops start-up naming a secrets file it cannot read', () => {
    const missing = join(home, 'nope.txt');
    expect(() => loadConfig({ CODEXEC_HOME: home, CODEXEC_SECRETS_FILE: missing })).toThrow(
      `CODEXEC_SECRETS_FILE: cannot read ${missing} (ENOENT)`,
    );
  });
});
