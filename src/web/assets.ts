import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';

/** The built files by the name the page asks for; anything else is 404. */
const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/assets/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/assets/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
};

interface Loaded {
  readonly body: Buffer;
  readonly gzipped: Buffer;
  readonly etag: string;
  readonly type: string;
}

/**
 * Serves the bundle, read once on first use and kept (with its gzip) in memory: ~40 KB. The
 * files are named without a hash, so the cache is long but revalidated by ETag on the HTML;
 * the JS and CSS are asked for with `?v=<etag>` by the page, so a new build is a new URL.
 */
export class Assets {
  private readonly loaded = new Map<string, Promise<Loaded>>();

  constructor(private readonly dir: URL) {}

  async serve(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const entry = FILES[path];
    if (!entry || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(entry ? 405 : 404, { 'content-type': 'text/plain' });
      res.end(entry ? 'use GET' : 'not found');
      return;
    }
    let loading = this.loaded.get(entry.file);
    if (!loading) {
      loading = this.load(entry.file, entry.type);
      this.loaded.set(entry.file, loading);
    }
    const file = await loading;
    const headers: Record<string, string> = {
      'content-type': file.type,
      etag: file.etag,
      // The HTML names the other files' versions: revalidated each time; they are immutable.
      'cache-control': path === '/' ? 'no-cache' : 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
      vary: 'accept-encoding',
    };
    if (path === '/') {
      headers['content-security-policy'] =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'";
    }
    if (req.headers['if-none-match'] === file.etag) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
    const body = gzip ? file.gzipped : file.body;
    if (gzip) headers['content-encoding'] = 'gzip';
    headers['content-length'] = String(body.length);
    res.writeHead(200, headers);
    res.end(req.method === 'HEAD' ? undefined : body);
  }

  private async load(file: string, type: string): Promise<Loaded> {
    let body = await readFile(new URL(file, this.dir));
    if (file === 'index.html') {
      // Each asset's URL carries its content's hash: a new build is fetched, an old one cached forever.
      let html = body.toString();
      for (const name of ['app.js', 'app.css']) {
        const version = digest(await readFile(new URL(name, this.dir))).slice(0, 12);
        html = html.replace(`/assets/${name}`, `/assets/${name}?v=${version}`);
      }
      body = Buffer.from(html);
    }
    return { body, gzipped: gzipSync(body, { level: 9 }), etag: `"${digest(body).slice(0, 20)}"`, type };
  }
}

function digest(data: Buffer): string {
  return createHash('sha256').update(data).digest('base64url');
}
