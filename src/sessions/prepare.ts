import { type Language, transpileTypeScript } from '../runtimes/index.js';

// Server-side preparation of a cell before it reaches its driver. Node cells run as classic
// scripts, where static `import` is a syntax error, so imports become `__codexecImport()` calls bound
// with `var`. Top-level `let`/`const` (at column 0) become `var` too: in a script a re-declared
// let/const is a SyntaxError, and one whose initializer threw stays unusable for the rest of the
// session, which breaks the fix-and-resend loop. TypeScript is stripped first.

export function prepareCell(language: Language, code: string): string {
  switch (language) {
    case 'node':
      return redeclarable(rewriteImports(code));
    case 'typescript':
      return redeclarable(rewriteImports(transpileTypeScript(code, true)));
    default:
      return code;
  }
}

const FROM_IMPORT =
  /^([ \t]*)import\s+([\w$]+\s*,\s*)?(\*\s*as\s+[\w$]+|\{[^}]*\}|[\w$]+)\s+from\s*(['"][^'"\n]+['"])[ \t]*;?/gm;
const BARE_IMPORT = /^([ \t]*)import\s*(['"][^'"\n]+['"])[ \t]*;?/gm;

/**
 * Turn top-of-line static imports into calls of the driver's `__codexecImport` (dynamic import
 * that also searches NODE_PATH); anything else is left for V8 to judge.
 */
export function rewriteImports(code: string): string {
  if (!/\bimport\b/.test(code)) return code;
  return code
    .replace(
      FROM_IMPORT,
      (_match, indent: string, first: string | undefined, clause: string, source: string) => {
        const defaultName = first?.replace(',', '').trim();
        const load = `await __codexecImport(${source})`;
        if (clause.startsWith('*')) {
          const ns = clause.replace(/^\*\s*as\s+/, '');
          return `${indent}var ${ns} = ${load};${defaultName ? ` var ${defaultName} = ${ns}.default;` : ''}`;
        }
        if (clause.startsWith('{')) {
          const names = clause
            .slice(1, -1)
            .split(',')
            .map((part) => part.trim())
            .filter(Boolean)
            .map((part) => part.replace(/^([\w$]+)\s+as\s+([\w$]+)$/, '$1: $2'));
          if (defaultName) names.unshift(`default: ${defaultName}`);
          return `${indent}var { ${names.join(', ')} } = ${load};`;
        }
        // `import x from` where `first` is absent: clause is the default binding.
        return `${indent}var ${clause} = (${load}).default;`;
      },
    )
    .replace(
      BARE_IMPORT,
      (_match, indent: string, source: string) => `${indent}await __codexecImport(${source});`,
    );
}

const TOP_LEVEL_LEXICAL = /^(?:let|const)(?=\s+[\w$[{])/gm;

/** `let`/`const` starting a line at column 0 → `var`, so a later cell may declare the name again. */
export function redeclarable(code: string): string {
  return code.replace(TOP_LEVEL_LEXICAL, 'var');
}
