// The control-channel framing and the server-side cell preparation (no processes involved).
import { describe, expect, it } from 'vitest';
import {
  encodeFrame,
  FrameDecoder,
  prepareCell,
  redeclarable,
  rewriteImports,
} from '../../src/sessions/index.js';

const frame = (message: object) => {
  const body = Buffer.from(JSON.stringify(message));
  return Buffer.concat([Buffer.from(`${body.length}\n`), body]);
};

describe('control frames', () => {
  it('encodes exec messages as a decimal byte length, a newline and compact JSON in key order', () => {
    const encoded = encodeFrame({ type: 'exec', id: 'exec_1', code: 'print("é")' }).toString('utf8');
    const body = '{"type":"exec","id":"exec_1","code":"print(\\"é\\")"}';
    expect(encoded).toBe(`${Buffer.byteLength(body)}\n${body}`);
  });

  it('reassembles messages split across chunks and several in one chunk', () => {
    const decoder = new FrameDecoder();
    const bytes = Buffer.concat([
      frame({ type: 'ready', pid: 7 }),
      frame({ type: 'done', id: 'exec_1', status: 'ok', exit_code: 0 }),
    ]);
    const messages = [];
    for (let i = 0; i < bytes.length; i += 5) messages.push(...decoder.push(bytes.subarray(i, i + 5)));
    expect(messages).toEqual([
      { type: 'ready', pid: 7 },
      { type: 'done', id: 'exec_1', status: 'ok', exit_code: 0 },
    ]);
  });

  it('rejects a corrupt channel instead of guessing', () => {
    expect(() => new FrameDecoder().push(Buffer.from('hello world, not a frame\n'))).toThrow(/header/);
    expect(() =>
      new FrameDecoder().push(frame({ type: 'done', id: 'x', status: 'maybe', exit_code: 0 })),
    ).toThrow();
    expect(() => new FrameDecoder().push(frame({ type: 'unknown' }))).toThrow();
  });
});

describe('cell preparation', () => {
  it('turns static imports into dynamic ones bound with var', () => {
    expect(rewriteImports("import fs from 'node:fs';")).toBe(
      "var fs = (await __codexecImport('node:fs')).default;",
    );
    expect(rewriteImports('import * as path from "node:path"')).toBe(
      'var path = await __codexecImport("node:path");',
    );
    expect(rewriteImports("import { a, b as c } from 'm'")).toBe(
      "var { a, b: c } = await __codexecImport('m');",
    );
    expect(rewriteImports("import d, { e } from 'm'")).toBe(
      "var { default: d, e } = await __codexecImport('m');",
    );
    expect(rewriteImports("import 'side-effect'")).toBe("await __codexecImport('side-effect');");
    expect(rewriteImports('const x = await import("m"); x.importThing')).toBe(
      'const x = await import("m"); x.importThing',
    );
  });

  it('strips TypeScript but keeps imports a later cell may use', () => {
    const out = prepareCell('typescript', "import { readFileSync } from 'node:fs';\nconst n: number = 1;");
    expect(out).toContain("var { readFileSync } = await __codexecImport('node:fs');");
    expect(out).toContain('var n = 1;');
  });

  it('makes column-0 let/const re-declarable and leaves nested ones alone', () => {
    expect(redeclarable('const a = 1;\nlet { b } = o;\nconst [c] = xs')).toBe(
      'var a = 1;\nvar { b } = o;\nvar [c] = xs',
    );
    expect(redeclarable('function f() {\n  const x = 1;\n}\nconstant = 2; letter')).toBe(
      'function f() {\n  const x = 1;\n}\nconstant = 2; letter',
    );
  });

  it('leaves python and bash untouched', () => {
    expect(prepareCell('python', 'import os')).toBe('import os');
    expect(prepareCell('bash', "import 'x'")).toBe("import 'x'");
  });
});
