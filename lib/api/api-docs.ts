// The API's own description, served without authentication: GET /openapi.json (the document in
// functions/openapi.json) and GET /docs, a reference rendered in the browser by Swagger UI
// (swagger-ui-dist: nothing is fetched from a CDN, and the page's Content-Security-Policy allows
// scripts and styles from this origin only).
//
// Swagger UI (1.7 MB) is not in the docs function's JS bundle (SPEC P4: under 1 MB, and loading
// the handler for /openapi.json should not parse it). infra/build.ts gzips each file of
// SWAGGER_UI_ASSETS once, at build time, into `<file>.gz` beside the bundle; the function reads
// one from disk the first time a request needs it and keeps it for the container's life.
import { promisify } from 'node:util';
import { gunzip as gunzipCallback, gzipSync } from 'node:zlib';

const gunzip = promisify(gunzipCallback);

export interface DocsAsset {
  /** Served as /docs/<file>; stored gzipped as `<file>.gz` next to the docs bundle. */
  file: string;
  /** Module specifier of the source file (resolved from the project root at build time). */
  source: string;
  type: string;
}

export const SWAGGER_UI_ASSETS: readonly DocsAsset[] = [
  { file: 'swagger-ui-bundle.js', source: 'swagger-ui-dist/swagger-ui-bundle.js', type: 'text/javascript; charset=utf-8' },
  { file: 'swagger-ui.css', source: 'swagger-ui-dist/swagger-ui.css', type: 'text/css; charset=utf-8' },
];

/** The name an asset is stored under, gzipped, next to the docs bundle. */
export const gzippedAssetName = (file: string) => `${file}.gz`;

export interface DocsContent {
  /** functions/openapi.json, as text. */
  openapi: string;
  /** The gzip bytes of one of SWAGGER_UI_ASSETS (its `gzippedAssetName` file). Called once per asset while it succeeds. */
  readGzippedAsset: (file: string) => Promise<Buffer>;
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

/** Whether an Accept-Encoding header accepts gzip (`gzip` or `*`, with no `q=0`). */
export function acceptsGzip(acceptEncoding: string): boolean {
  const q = new Map<string, number>();
  for (const part of acceptEncoding.split(',')) {
    const [coding = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (!coding) continue;
    const qParam = params.find((p) => p.startsWith('q='));
    const value = qParam === undefined ? 1 : Number(qParam.slice(2));
    q.set(coding, Number.isFinite(value) ? value : 0);
  }
  return (q.get('gzip') ?? q.get('x-gzip') ?? q.get('*') ?? 0) > 0;
}

/** Loads a value once; a failed load is forgotten, so the next request tries again. */
function once<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () =>
    (pending ??= load().catch((e: unknown) => {
      pending = undefined;
      throw e;
    }));
}

interface Served {
  type: string;
  cache: string;
  /** Gzip bytes, loaded or made on first use. */
  gzip: () => Promise<Buffer>;
  plain: () => Promise<string>;
  /** Small texts are not worth compressing. */
  compressible: boolean;
}

function inline(type: string, body: string, cache: string): Served {
  return {
    type,
    cache,
    gzip: once(() => Promise.resolve(gzipSync(body))),
    plain: () => Promise.resolve(body),
    compressible: Buffer.byteLength(body) >= MIN_GZIP_BYTES,
  };
}

function stored(asset: DocsAsset, read: DocsContent['readGzippedAsset']): Served {
  const gzip = once(() => read(asset.file));
  // Only a client that refuses gzip costs a decompression (once per container).
  const plain = once(async () => (await gunzip(await gzip())).toString('utf8'));
  return { type: asset.type, cache: 'public, max-age=3600', gzip, plain, compressible: true };
}

/** Documents served per server URL (a container sees one or two): bounded, so odd Host headers cannot grow it. */
const MAX_SERVED_DOCUMENTS = 8;

/**
 * The URL of the server a request came to, from its Host (and X-Forwarded-Proto) header: /openapi.json
 * names it as the document's server, so "Try it out" on /docs calls this server, e.g. npm start under
 * HTTP_PORT=3500, never a fixed 127.0.0.1:3000 (issue 34). Undefined without a usable Host.
 */
export function serverUrlOf(host: string | undefined, forwardedProto: string | undefined): string | undefined {
  if (!host || !/^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(host)) return undefined;
  const proto = forwardedProto?.split(',')[0]?.trim().toLowerCase();
  const loopback = /^(127\.|localhost(:|$)|\[::1\])/.test(host);
  return `${proto === 'http' || proto === 'https' ? proto : loopback ? 'http' : 'https'}://${host}`;
}

/**
 * Answers the docs routes. A stored asset that cannot be read (a packaging defect) rejects: the
 * invocation fails, Lambda logs it and counts an error, and the next request reads again.
 */
export function createDocsResponder(
  content: DocsContent,
): (method: string, path: string, acceptEncoding?: string, serverUrl?: string) => Promise<DocsResponse> {
  const byServer = new Map<string, Served>();
  /** The document naming `serverUrl` as its one server; as stored without one. */
  const openapiFor = (serverUrl: string | undefined): Served | undefined => {
    if (serverUrl === undefined) return undefined;
    let served = byServer.get(serverUrl);
    if (!served) {
      const doc = JSON.parse(content.openapi) as Record<string, unknown>;
      doc.servers = [{ url: serverUrl, description: 'the server that served this document' }];
      served = inline('application/json; charset=utf-8', JSON.stringify(doc), 'no-cache');
      if (byServer.size >= MAX_SERVED_DOCUMENTS) byServer.delete(byServer.keys().next().value!);
      byServer.set(serverUrl, served);
    }
    return served;
  };
  const files: Record<string, Served> = {
    '/openapi.json': inline('application/json; charset=utf-8', content.openapi, 'no-cache'),
    '/docs': inline('text/html; charset=utf-8', PAGE, 'no-cache'),
    '/docs/init.js': inline('text/javascript; charset=utf-8', INIT, 'no-cache'),
    ...Object.fromEntries(SWAGGER_UI_ASSETS.map((a) => [`/docs/${a.file}`, stored(a, content.readGzippedAsset)])),
  };
  return async (method, path, acceptEncoding = '', serverUrl) => {
    const file = (path === '/openapi.json' ? openapiFor(serverUrl) : undefined) ?? (Object.hasOwn(files, path) ? files[path] : undefined);
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
    if (file.compressible && acceptsGzip(acceptEncoding)) {
      const gz = await file.gzip();
      return { status: 200, headers: { ...headers, 'content-encoding': 'gzip' }, body: method === 'HEAD' ? Buffer.alloc(0) : gz };
    }
    const body = await file.plain();
    return { status: 200, headers, body: method === 'HEAD' ? '' : body };
  };
}
