// Bundles the bin (src/cli.ts) into dist/bundle: the program and the packages it loads at start
// (the MCP server SDK, zod, commander) in a few files, comments and whitespace out, names kept.
// An idle stdio server then holds ~9 MB less (V8 keeps every module's source, and the SDK's with a
// non-Latin-1 character in its comments as two bytes per character) and answers its first
// tools/list ~40 % sooner (bench/idle-rss.mjs). What loads on first use stays a chunk of its own,
// imported when first used; native, WebAssembly and optional packages are left in node_modules.
// dist/cli.js, the bin, imports the bundle's entry; tsc's dist/ stays for the library's users.
// dist/bundle/meta.json says which sources each file holds (test/helpers/module-log.ts reads it).
// Run by `npm run build` after tsc.
import { chmod, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist/bundle');
/** Loaded from node_modules as before: native modules, files found by path, optional features. */
const EXTERNAL = [
  'better-sqlite3',
  'pg',
  'sucrase',
  'tree-sitter-bash',
  'web-tree-sitter',
  'jsonc-parser',
  'smol-toml',
  'prom-client',
  'node-forge',
  '@opentelemetry/*',
];

/**
 * zod's messages in English alone. zod re-exports its ~40 locales as a namespace (`z.locales`),
 * which esbuild keeps whole once the namespace is used as a value (the SDK does): ~300 KB of
 * source, much of it outside Latin-1, so V8 keeps the chunk that holds it at two bytes per
 * character. codexec never changes zod's locale (English is zod's default).
 */
const englishOnly = {
  name: 'zod-english-only',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      args.importer.includes('/node_modules/zod/')
        ? { path: 'zod-locales', namespace: 'codexec' }
        : undefined,
    );
    build.onLoad({ filter: /^zod-locales$/, namespace: 'codexec' }, () => ({
      contents: "export { default as en } from 'zod/v4/locales/en.js';",
      resolveDir: root,
    }));
  },
};

/**
 * The server SDK's JSON Schema validator (ajv, which the SDK carries inside: ~300 KB of source,
 * its modules evaluated as the SDK loads) loaded when it first validates, from the SDK's own
 * CommonJS build. The server uses it for an elicitation's answer alone (an approval asked of the
 * client); an idle stdio server never does.
 */
const lazyAjv = {
  name: 'sdk-lazy-ajv',
  setup(build) {
    build.onResolve({ filter: /^@modelcontextprotocol\/server\/_shims$/ }, () => ({
      path: 'server-shims',
      namespace: 'codexec',
    }));
    build.onLoad({ filter: /^server-shims$/, namespace: 'codexec' }, () => ({
      contents: `
import { createRequire } from 'node:module';
import process from 'node:process';
export class DefaultJsonSchemaValidator {
  #ajv;
  getValidator(schema) {
    this.#ajv ??= new (createRequire(import.meta.url)('@modelcontextprotocol/server/validators/ajv').AjvJsonSchemaValidator)();
    return this.#ajv.getValidator(schema);
  }
}
export { process };
`,
      resolveDir: root,
    }));
  },
};

await rm(out, { recursive: true, force: true });
const { metafile } = await build({
  absWorkingDir: root, // the metafile's paths are relative to it
  entryPoints: [join(root, 'src/cli.ts')],
  outdir: out,
  outbase: join(root, 'src'),
  entryNames: '[dir]/[name]',
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  external: EXTERNAL,
  // CommonJS packages in the bundle (commander) call require.
  banner: {
    js: "import { createRequire as __codexecRequire } from 'node:module'; const require = __codexecRequire(import.meta.url);",
  },
  metafile: true,
  logLevel: 'warning',
  plugins: [englishOnly, lazyAjv],
});
/** A source as the package names it: `src/…` or `node_modules/…` (wherever node_modules really is). */
function source(input) {
  const at = input.lastIndexOf('node_modules/');
  return at === -1 ? input : input.slice(at);
}

const inputs = Object.fromEntries(
  Object.entries(metafile.outputs).map(([file, output]) => [
    relative(out, join(root, file)),
    Object.keys(output.inputs).map(source),
  ]),
);
await writeFile(join(out, 'meta.json'), `${JSON.stringify(inputs)}\n`);

const bin = join(root, 'dist/cli.js');
await writeFile(
  bin,
  "#!/usr/bin/env node\n// codexec's bin: the bundle of src/cli.ts (scripts/bundle.mjs).\nimport './bundle/cli.js';\n",
);
await chmod(bin, 0o755);
