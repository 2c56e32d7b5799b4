import { createRequire } from 'node:module';

type Transform = (
  code: string,
  options: { transforms: string[]; disableESTransforms: boolean; keepUnusedImports: boolean },
) => { code: string };

/** Code that cannot even be prepared for its interpreter. */
export class CodeSyntaxError extends Error {
  override name = 'CodeSyntaxError';
}

let transform: Transform | undefined;

/**
 * Strip TypeScript syntax (types, enums, namespaces) without type checking; loaded on first use.
 * `keepUnusedImports` for REPL cells, where a name imported now is typically used by a later cell.
 */
export function transpileTypeScript(code: string, keepUnusedImports = false): string {
  transform ??= (createRequire(import.meta.url)('sucrase') as { transform: Transform }).transform;
  try {
    return transform(code, { transforms: ['typescript'], disableESTransforms: true, keepUnusedImports }).code;
  } catch (error) {
    // The code's fault, not a refused request: reported as a failed run or send.
    throw new CodeSyntaxError(`TypeScript syntax error: ${(error as Error).message}`);
  }
}
