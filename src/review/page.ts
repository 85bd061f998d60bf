import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The review page's static files (built from src/review/page/ into dist/review/page/ by
 * `npm run build`). They hold no data, so they are served without the admin token; every
 * /api call the page makes still needs it. Strict headers: no inline script, no framing,
 * nothing cached, no referrer.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

interface Asset {
  readonly type: string;
  readonly body: Buffer;
}

/**
 * Where the built page is: beside this module once compiled (dist/review/page/), or, when
 * this module runs from its TypeScript source (the tests), in dist/ of the same checkout.
 */
function pageDir(): string | null {
  const candidates = [
    new URL('./page/', import.meta.url),
    new URL('../../dist/review/page/', import.meta.url),
  ];
  for (const url of candidates) {
    const dir = fileURLToPath(url);
    if (existsSync(join(dir, 'index.html')) && existsSync(join(dir, 'app.js'))) return dir;
  }
  return null;
}

function load(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (type) assets.set(`/${name}`, { type, body: readFileSync(join(dir, name)) });
  }
  assets.set('/', assets.get('/index.html') as Asset);
  return assets;
}

/**
 * A handler for the page's routes: `GET /` and the files beside it (`/app.js`, `/page.css`,
 * …). Answers and returns true for those; returns false for anything else (the API). Files
 * are read once, on first use.
 */
export function reviewPage(
  dir: string | null = pageDir(),
): (req: IncomingMessage, res: ServerResponse, path: string) => boolean {
  let assets: Map<string, Asset> | null = null;
  return (req, res, path) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    if (path !== '/' && !/^\/[\w-]+(\.[\w-]+)*\.(html|css|js|svg)$/.test(path)) return false;
    if (dir === null) {
      if (path !== '/') return false;
      const text = 'The review page is not built: run `npm run build`.\n';
      res.writeHead(503, { ...PAGE_HEADERS, 'content-type': 'text/plain; charset=utf-8' });
      res.end(req.method === 'HEAD' ? undefined : text);
      return true;
    }
    assets ??= load(dir);
    const asset = assets.get(path);
    if (!asset) return false;
    res.writeHead(200, {
      ...PAGE_HEADERS,
      'content-type': asset.type,
      'content-length': asset.body.length,
    });
    res.end(req.method === 'HEAD' ? undefined : asset.body);
    return true;
  };
}
