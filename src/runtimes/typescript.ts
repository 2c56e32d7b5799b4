import { createRequire } from 'node:module';

type Transform = (
  code: string,
  options: { transforms: string[]; disableESTransforms: boolean },
) => { code: string };

/** Code that cannot even be prepared for its interpreter. */
export class CodeSyntaxError extends Error {
  override name = 'CodeSyntaxError';
}

let transform: Transform | undefined;

/** Strip TypeScript syntax (types, enums, namespaces) without type checking; loaded on first use. */
export function transpileTypeScript(code: string): string {
  transform ??= (createRequire(import.meta.url)('sucrase') as { transform: Transform }).transform;
  try {
    return transform(code, { transforms: ['typescript'], disableESTransforms: true }).code;
  } catch (error) {
    // The code's fault, not a refused request: the engine reports it as a failed run.
    throw new CodeSyntaxError(`TypeScript syntax error: ${(error as Error).message}`);
  }
}
