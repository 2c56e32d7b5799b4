// The dashboard's server side: its page and files (built by esbuild into dist/web/assets) and a
// JSON/SSE API over the services the tools use. serve --http imports it on the first request for it.
import { pathToFileURL } from 'node:url';
import { packagePath } from '../util/index.js';
import { serveApi } from './api.js';
import { Assets } from './assets.js';
import type { Dashboard, DashboardDeps } from './types.js';

export type { Dashboard, DashboardDeps } from './types.js';

export function createDashboard(deps: DashboardDeps): Dashboard {
  const assets = new Assets(pathToFileURL(`${packagePath('dist', 'web', 'assets')}/`));
  return {
    serveAsset: (req, res, path) => assets.serve(req, res, path),
    serveApi: (req, res, path, principal) => serveApi(deps, req, res, path, principal),
  };
}
