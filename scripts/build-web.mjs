// Bundles the dashboard (src/web/ui, Preact in TSX) into dist/web/assets: one minified app.js,
// app.css and the HTML shell; and the MCP Apps result view (src/web/ui/view) into
// dist/web/apps/result.html, one file with its script and style inline (a ui:// resource is one
// document, and its CSP loads nothing from anywhere). Run by `npm run build` after tsc; the
// server reads them from there.
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist/web/assets');
await mkdir(out, { recursive: true });
const common = { bundle: true, minify: true, legalComments: 'none', logLevel: 'warning' };
await build({
  ...common,
  entryPoints: [join(root, 'src/web/ui/main.tsx')],
  outfile: join(out, 'app.js'),
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  tsconfig: join(root, 'src/web/ui/tsconfig.json'),
});
await build({ ...common, entryPoints: [join(root, 'src/web/ui/style.css')], outfile: join(out, 'app.css') });
await copyFile(join(root, 'src/web/ui/index.html'), join(out, 'index.html'));

// The view: one HTML document. 'inline-script' unsupported: esbuild escapes any `</script` in it.
const view = join(root, 'src/web/ui/view');
// zod's translated messages (`z.locales`, 260 KB) reach the view through the MCP client the
// extension's App is built on; nothing asks for one (English is imported on its own), so they stay out.
const noLocales = {
  name: 'no-zod-locales',
  setup(on) {
    on.onResolve({ filter: /\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]/.test(args.importer) ? { path: 'zod-locales', namespace: 'no-zod-locales' } : undefined,
    );
    on.onLoad({ filter: /.*/, namespace: 'no-zod-locales' }, () => ({
      contents: 'export {};',
      loader: 'js',
    }));
  },
};
const [script, style] = await Promise.all([
  build({
    ...common,
    entryPoints: [join(view, 'main.tsx')],
    write: false,
    format: 'esm',
    target: 'es2022',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfig: join(root, 'src/web/ui/tsconfig.json'),
    supported: { 'inline-script': false },
    plugins: [noLocales],
  }),
  build({
    ...common,
    entryPoints: [join(view, 'style.css')],
    write: false,
    supported: { 'inline-style': false },
  }),
]);
const shell = await readFile(join(view, 'index.html'), 'utf8');
const html = shell
  .replace('/*STYLE*/', () => style.outputFiles[0].text.trim())
  .replace('/*SCRIPT*/', () => script.outputFiles[0].text.trim());
await mkdir(join(root, 'dist/web/apps'), { recursive: true });
await writeFile(join(root, 'dist/web/apps/result.html'), html);
