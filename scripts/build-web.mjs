// Bundles the dashboard (src/web/ui, Preact in TSX) into dist/web/assets: one minified app.js,
// app.css and the HTML shell. Run by `npm run build` after tsc; the server reads them from there.
import { copyFile, mkdir } from 'node:fs/promises';
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
