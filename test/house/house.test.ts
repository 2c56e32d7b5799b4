import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// The shape of the source tree, held as tests: small files and functions a newcomer can read on a
// screen, imports that point one way, and comments that explain themselves without a document
// outside the repository.
const ROOT = resolve(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');
const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 80;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}
const FILES = sources(SRC);
const text = new Map(FILES.map((file) => [file, readFileSync(file, 'utf8')]));
const name = (file: string) => relative(ROOT, file);

/** The files `file` imports by a relative path (types too: a circle of types is still a circle). */
function importsOf(file: string): string[] {
  const found: string[] = [];
  for (const match of (text.get(file) ?? '').matchAll(/(?:import|export)\s[^'";]*?from\s+'(\.[^']+)'/g)) {
    const target = resolve(dirname(file), (match[1] ?? '').replace(/\.js$/, ''));
    const hit = [`${target}.ts`, `${target}.tsx`, join(target, 'index.ts')].find((path) => text.has(path));
    if (hit) found.push(hit);
  }
  return found;
}

/** Strongly connected groups of more than one file (Tarjan). */
function circles(): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next++);
    stack.push(file);
    onStack.add(file);
    for (const target of importsOf(file)) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file) ?? 0, low.get(target) ?? 0));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file) ?? 0, index.get(target) ?? 0));
    }
    if (low.get(file) !== index.get(file)) return;
    const group: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      group.push(name(member));
    } while (member !== file);
    if (group.length > 1) found.push(group);
  };
  for (const file of FILES) if (!index.has(file)) visit(file);
  return found;
}

/** Functions, methods and arrow functions bound to a name, longer than the limit. */
function longFunctions(): string[] {
  const long: string[] = [];
  for (const file of FILES) {
    const source = ts.createSourceFile(file, text.get(file) ?? '', ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      const named =
        ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isConstructorDeclaration(node)
          ? node.body
          : (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) &&
              ts.isVariableDeclaration(node.parent)
            ? node.body
            : undefined;
      if (named) {
        const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
        const end = source.getLineAndCharacterOfPosition(node.end).line;
        if (end - start + 1 > MAX_FUNCTION_LINES)
          long.push(`${name(file)}:${start + 1} (${end - start + 1} lines)`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return long;
}

describe('the source tree', () => {
  it(`has no file over ${MAX_FILE_LINES} lines`, () => {
    const large = FILES.filter((file) => (text.get(file) ?? '').split('\n').length > MAX_FILE_LINES + 1);
    expect(large.map(name)).toEqual([]);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines`, () => {
    expect(longFunctions()).toEqual([]);
  });

  it('has no import circle', () => {
    expect(circles()).toEqual([]);
  });

  it('asks no backend which sandbox mode it is outside src/sandbox', () => {
    const asking = FILES.filter((file) => !file.startsWith(join(SRC, 'sandbox')))
      .filter((file) => /\b(?:backend|auto|configured)\.mode\s*[!=]==/.test(text.get(file) ?? ''))
      .map(name);
    expect(asking).toEqual([]);
  });

  it('has no comment that cites a design document or an issue number', () => {
    const citing = FILES.filter((file) => /\bDESIGN\b|\bADR ?\d|\bissue #?\d/.test(text.get(file) ?? '')).map(
      name,
    );
    expect(citing).toEqual([]);
  });

  it('writes times with isoTime, not toISOString (its time zone lookup maps ICU data)', () => {
    const calling = FILES.filter((file) => /\.toISOString\(/.test(text.get(file) ?? '')).map(name);
    expect(calling).toEqual([]);
  });

  it("makes the tools' schemas when asked, none at module scope (every idle server would hold them)", () => {
    const shared = ['server/egress.ts', 'server/codemode.ts', 'logs/filters.ts'].map((file) =>
      join(SRC, file),
    );
    const eager = FILES.filter(
      (file) => /\/src\/(server\/tools|results)\//.test(file) || shared.includes(file),
    ).flatMap((file) => {
      const source = ts.createSourceFile(file, text.get(file) ?? '', ts.ScriptTarget.Latest, true);
      return source.statements
        .filter(ts.isVariableStatement)
        .flatMap((statement) => [...statement.declarationList.declarations])
        .filter((declaration) => declaration.initializer !== undefined && makesZod(declaration.initializer))
        .map((declaration) => `${name(file)}: ${declaration.name.getText(source)}`);
    });
    expect(eager).toEqual([]);
  });
});

/** Whether evaluating `node` calls zod now (a function that would call it later does not). */
function makesZod(node: ts.Node): boolean {
  if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) return false;
  if (ts.isIdentifier(node)) return node.text === 'z';
  return ts.forEachChild(node, (child) => (makesZod(child) ? true : undefined)) ?? false;
}
