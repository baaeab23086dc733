// lib/api/api-docs.ts: Swagger UI's files come from the docs function's disk (gzip bytes written by
// infra/build.ts), read on the first request that needs each and kept; gzip when the client
// accepts it, the plain text otherwise. The e2e test (test/e2e/http/api-docs.test.ts) serves the
// real files through the built bundle under serverless-offline.
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { acceptsGzip, createDocsResponder, serverUrlOf, SWAGGER_UI_ASSETS } from '../../../lib/api/api-docs.js';

const texts: Record<string, string> = {
  'swagger-ui-bundle.js': `window.SwaggerUIBundle = () => 'ü';\n${'x'.repeat(5000)}`,
  'swagger-ui.css': `.swagger-ui { color: red }\n${'y'.repeat(5000)}`,
};

function responder(fail = 0) {
  const reads: string[] = [];
  let failures = fail;
  const respond = createDocsResponder({
    openapi: JSON.stringify({ openapi: '3.1.0', info: { title: 't', version: '1' }, paths: {}, pad: 'z'.repeat(2000) }),
    readGzippedAsset: async (file) => {
      reads.push(file);
      await new Promise((r) => setTimeout(r, 5));
      if (failures-- > 0) throw Object.assign(new Error(`ENOENT: ${file}.gz`), { code: 'ENOENT' });
      return gzipSync(texts[file]!);
    },
  });
  return { respond, reads };
}

describe('docs responder (SPEC P4: Swagger UI served from disk, not from the bundle)', () => {
  it('P4: reads no asset until a request needs it, then each once, also under concurrent first requests', async () => {
    const { respond, reads } = responder();
    await respond('GET', '/openapi.json', 'gzip');
    await respond('GET', '/docs', 'gzip');
    expect(reads).toEqual([]);
    const first = await Promise.all([1, 2, 3].map(() => respond('GET', '/docs/swagger-ui-bundle.js', 'gzip')));
    for (const r of first) expect(r.status).toBe(200);
    await respond('GET', '/docs/swagger-ui-bundle.js', '');
    expect(reads).toEqual(['swagger-ui-bundle.js']);
    await respond('GET', '/docs/swagger-ui.css', 'gzip');
    expect(reads).toEqual(['swagger-ui-bundle.js', 'swagger-ui.css']);
  });

  it('serves the stored gzip bytes to a gzip client and the plain text to one that refuses gzip', async () => {
    const { respond } = responder();
    for (const a of SWAGGER_UI_ASSETS) {
      const gz = await respond('GET', `/docs/${a.file}`, 'br, gzip;q=0.8');
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(gz.headers['content-type']).toBe(a.type);
      expect(gz.headers.vary).toBe('accept-encoding');
      expect(Buffer.isBuffer(gz.body)).toBe(true);
      expect(gz.body).toEqual(gzipSync(texts[a.file]!));
      for (const refuses of ['', 'identity', 'br', 'gzip;q=0', 'gzip; q=0.0, br']) {
        const plain = await respond('GET', `/docs/${a.file}`, refuses);
        expect(plain.headers, refuses).not.toHaveProperty('content-encoding');
        expect(plain.body, refuses).toBe(texts[a.file]);
      }
    }
  });

  it('a failed read answers nothing cached: the request fails and the next one reads again', async () => {
    const { respond, reads } = responder(1);
    await expect(respond('GET', '/docs/swagger-ui.css', 'gzip')).rejects.toThrow(/ENOENT/);
    const r = await respond('GET', '/docs/swagger-ui.css', 'gzip');
    expect(r.status).toBe(200);
    expect(reads).toEqual(['swagger-ui.css', 'swagger-ui.css']);
  });

  it('unknown paths are 404 (inherited object keys too), other methods 405', async () => {
    const { respond, reads } = responder();
    for (const p of ['/docs/nope.js', '/docs/constructor', '/docs/swagger-ui-bundle.js.gz', '/docs/index.mjs']) {
      expect((await respond('GET', p)).status, p).toBe(404);
    }
    expect((await respond('POST', '/docs/swagger-ui.css')).status).toBe(405);
    expect(reads).toEqual([]);
  });

  it('Accept-Encoding parsing: gzip, x-gzip or * with a non-zero q', () => {
    expect(['gzip', 'gzip, deflate, br', 'br;q=1, gzip;q=0.5', '*', 'x-gzip', 'GZIP'].map(acceptsGzip)).toEqual([
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(['', 'identity', 'br', 'gzip;q=0', '*;q=0', 'gzip;q=0, *;q=1', 'gzip;q=abc'].map(acceptsGzip)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it('issue 34: /openapi.json names the server the request came to (HTTP_PORT=3500 → :3500), not a fixed one', async () => {
    const { respond } = responder();
    const served = async (server?: string) =>
      JSON.parse((await respond('GET', '/openapi.json', '', server)).body as string) as { servers?: unknown };
    expect((await served('http://127.0.0.1:3500')).servers).toEqual([
      { url: 'http://127.0.0.1:3500', description: 'the server that served this document' },
    ]);
    expect((await served('https://abc.execute-api.eu-west-1.amazonaws.com')).servers).toEqual([
      { url: 'https://abc.execute-api.eu-west-1.amazonaws.com', description: 'the server that served this document' },
    ]);
    // gzip too, and without a usable Host the document as stored.
    const gz = await respond('GET', '/openapi.json', 'gzip', 'http://127.0.0.1:3500');
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect((await served()).servers).toBeUndefined();
  });

  it('issue 34: the server URL from Host and X-Forwarded-Proto; loopback is http, anything else https; odd hosts none', () => {
    expect(serverUrlOf('127.0.0.1:3500', undefined)).toBe('http://127.0.0.1:3500');
    expect(serverUrlOf('localhost:3000', undefined)).toBe('http://localhost:3000');
    expect(serverUrlOf('api.example.com', undefined)).toBe('https://api.example.com');
    expect(serverUrlOf('api.example.com', 'http, https')).toBe('http://api.example.com');
    expect(serverUrlOf('evil.com/path', undefined)).toBeUndefined();
    expect(serverUrlOf(undefined, 'https')).toBeUndefined();
  });
});
