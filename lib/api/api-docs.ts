// The API's own description, served without authentication: GET /openapi.json (the document in
// functions/openapi.json) and GET /docs, a reference rendered in the browser by Swagger UI
// (swagger-ui-dist, bundled into the docs function: nothing is fetched from a CDN, and the page's
// Content-Security-Policy allows scripts and styles from this origin only).
import { gzipSync } from 'node:zlib';

export interface DocsContent {
  /** functions/openapi.json, as text. */
  openapi: string;
  /** swagger-ui-dist/swagger-ui-bundle.js */
  swaggerUiJs: string;
  /** swagger-ui-dist/swagger-ui.css */
  swaggerUiCss: string;
}

export interface DocsResponse {
  status: number;
  headers: Record<string, string>;
  /** Text, or gzip bytes when `headers['content-encoding']` says so. */
  body: string | Buffer;
}

/** Relative URLs, so the page works behind a stage prefix too (/prod/docs loads /prod/docs/..., /prod/openapi.json). */
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>session-lineage API reference</title>
<link rel="stylesheet" href="docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
`;

// validatorUrl null: Swagger UI would otherwise send the document to validator.swagger.io.
const INIT = `window.ui = SwaggerUIBundle({ url: 'openapi.json', dom_id: '#swagger-ui', validatorUrl: null, deepLinking: true });\n`;

const PAGE_CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'";

/** Paths this module answers (API Gateway routes of the docs function; the assets under /docs/{asset}). */
export const DOCS_ROUTES = ['GET /openapi.json', 'GET /docs', 'GET /docs/{asset}'] as const;

const MIN_GZIP_BYTES = 1024;

export function createDocsResponder(content: DocsContent): (method: string, path: string, acceptEncoding?: string) => DocsResponse {
  const files: Record<string, { type: string; body: string; cache: string }> = {
    '/openapi.json': { type: 'application/json; charset=utf-8', body: content.openapi, cache: 'no-cache' },
    '/docs': { type: 'text/html; charset=utf-8', body: PAGE, cache: 'no-cache' },
    '/docs/init.js': { type: 'text/javascript; charset=utf-8', body: INIT, cache: 'no-cache' },
    '/docs/swagger-ui-bundle.js': { type: 'text/javascript; charset=utf-8', body: content.swaggerUiJs, cache: 'public, max-age=3600' },
    '/docs/swagger-ui.css': { type: 'text/css; charset=utf-8', body: content.swaggerUiCss, cache: 'public, max-age=3600' },
  };
  // Compressed once per container, on first use (the Swagger UI bundle is 1.7 MB, about 500 kB gzipped).
  const gzipped = new Map<string, Buffer>();
  return (method, path, acceptEncoding = '') => {
    const file = files[path];
    if (!file) {
      return {
        status: 404,
        headers: { 'content-type': 'application/json; charset=utf-8' },
        body: JSON.stringify({ error: { code: 'not_found', message: `no such document: ${path}` } }),
      };
    }
    if (method !== 'GET' && method !== 'HEAD') {
      return {
        status: 405,
        headers: { 'content-type': 'application/json; charset=utf-8', allow: 'GET, HEAD' },
        body: JSON.stringify({ error: { code: 'method_not_allowed', message: `${method} is not allowed on ${path}; use GET` } }),
      };
    }
    const headers: Record<string, string> = {
      'content-type': file.type,
      'cache-control': file.cache,
      'x-content-type-options': 'nosniff',
      vary: 'accept-encoding',
    };
    if (path === '/docs') headers['content-security-policy'] = PAGE_CSP;
    if (path === '/openapi.json') headers['access-control-allow-origin'] = '*';
    const wantsGzip = /\bgzip\b/i.test(acceptEncoding) && Buffer.byteLength(file.body) >= MIN_GZIP_BYTES;
    if (!wantsGzip) return { status: 200, headers, body: method === 'HEAD' ? '' : file.body };
    let gz = gzipped.get(path);
    if (!gz) gzipped.set(path, (gz = gzipSync(file.body)));
    return { status: 200, headers: { ...headers, 'content-encoding': 'gzip' }, body: method === 'HEAD' ? Buffer.alloc(0) : gz };
  };
}
