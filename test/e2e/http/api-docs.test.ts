// GET /openapi.json and GET /docs (issue 24), served by the docs function under serverless-offline
// without authentication. /docs is opened in Debian's headless Chromium (playwright-core drives
// /usr/bin/chromium): the rendered page must list every documented operation, every request the
// page makes must stay on our origin (Swagger UI comes from node_modules, not a CDN), and a
// screenshot is kept in test/artifacts/api-docs.png (gitignored).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../../infra/build.js';
import { gzippedAssetName, SWAGGER_UI_ASSETS } from '../../../lib/api/api-docs.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`${CHROMIUM} is missing: the /docs rendering test is SKIPPED (.ci/run installs chromium)`);

const doc = JSON.parse(readFileSync(join(projectRoot, 'functions', 'openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, unknown>>;
};
const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.keys(item)
    .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
    .map((m) => `${m.toUpperCase()} ${path}`),
);

/** A GET whose body is the bytes on the wire (no content decoding). */
function getRaw(url: string, acceptEncoding: string): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { 'accept-encoding': acceptEncoding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

let service: LocalService;
beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
}, 240_000);
afterAll(async () => {
  await service?.stop();
});

describe('API document', () => {
  it('GET /openapi.json needs no key and serves functions/openapi.json, naming this server (its port) as the server', async () => {
    const res = await fetch(`${service.baseUrl}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ ...doc, servers: [{ url: service.baseUrl, description: 'the server that served this document' }] });
  });

  it('GET /docs needs no key, is HTML that loads Swagger UI from this origin only; unknown assets are 404', async () => {
    const page = await fetch(`${service.baseUrl}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain('<script src="docs/swagger-ui-bundle.js"></script>');
    expect(html).not.toMatch(/https?:\/\//);
    const js = await fetch(`${service.baseUrl}/docs/swagger-ui-bundle.js`, { headers: { 'accept-encoding': 'gzip' } });
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(js.headers.get('content-encoding')).toBe('gzip');
    // fetch decodes gzip: the text is the package's own file.
    expect(await js.text()).toBe(readFileSync(join(projectRoot, 'node_modules', 'swagger-ui-dist', 'swagger-ui-bundle.js'), 'utf8'));
    expect((await fetch(`${service.baseUrl}/docs/nope.js`)).status).toBe(404);
  });

  it('P4: Swagger UI comes from the gzipped files beside the docs bundle, as gzip or, for a client refusing it, as plain text', async () => {
    for (const a of SWAGGER_UI_ASSETS) {
      const source = readFileSync(join(projectRoot, 'node_modules', a.source));
      // Served bytes are the stored file's: gzip on the wire (undici's fetch would decode it, node:http does not).
      const gz = await getRaw(`${service.baseUrl}/docs/${a.file}`, 'gzip');
      expect(gz.status).toBe(200);
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(gz.body.equals(readFileSync(join(projectRoot, '.esbuild', 'docs', gzippedAssetName(a.file))))).toBe(true);
      expect(gunzipSync(gz.body).equals(source)).toBe(true);
      const plain = await getRaw(`${service.baseUrl}/docs/${a.file}`, 'identity');
      expect(plain.status).toBe(200);
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.headers['content-type']).toBe(a.type);
      expect(plain.body.equals(source)).toBe(true);
    }
  });

  describe.skipIf(!hasChromium)(`rendered in headless Chromium${hasChromium ? '' : ' (SKIPPED: no chromium)'}`, () => {
    let browser: BrowserContext;
    let profile: string;
    beforeAll(async () => {
      // A fresh profile (playwright passes it as --user-data-dir) and no background traffic of Chromium's own.
      profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'));
      browser = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        viewport: { width: 1280, height: 1600 },
        args: [
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      rmSync(profile, { recursive: true, force: true });
    });

    it('lists every documented operation, with no request leaving our origin; screenshot kept', async () => {
      const page = await browser.newPage();
      const requested: string[] = [];
      page.on('request', (r) => requested.push(r.url()));
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`${service.baseUrl}/docs`);
      await page.waitForSelector('.opblock', { timeout: 30_000 });
      const rendered = await page.$$eval('.opblock', (blocks) =>
        blocks.map((b) => {
          const method = b.querySelector('.opblock-summary-method')?.textContent?.trim() ?? '';
          const path = b.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? '';
          return `${method} ${path}`;
        }),
      );
      expect([...rendered].sort()).toEqual([...operations].sort());
      expect(await page.title()).toBe('session-lineage API reference');
      expect(errors).toEqual([]);
      expect(requested.filter((u) => !u.startsWith(`${service.baseUrl}/`) && !u.startsWith('data:'))).toEqual([]);
      const artifacts = join(projectRoot, 'test', 'artifacts');
      mkdirSync(artifacts, { recursive: true });
      await page.screenshot({ path: join(artifacts, 'api-docs.png'), fullPage: false });
      // A real PNG of the viewport was written: signature, then IHDR width and height.
      const png = readFileSync(join(artifacts, 'api-docs.png'));
      expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
      expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([1280, 1600]);
    }, 90_000);
  });
});
