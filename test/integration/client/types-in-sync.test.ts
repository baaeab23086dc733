// The client's types are generated from functions/openapi.json and must never drift from it:
// regenerate them exactly as `npm run build:client-types` does and compare with the committed
// file. The limits the client splits by are the document's, and the package (lib/client/package.json)
// declares only what it ships and needs; its code bundles with no imports and loads in plain Node.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { CLIENT_BUNDLE_TARGET_KIB, measureClientBundle } from '../../../infra/client-bundle.js';
import { MAX_APPEND_BODY_BYTES, MAX_TAIL } from '../../../lib/client/index.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  private: boolean;
  workspaces: string[];
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
};
const doc = JSON.parse(readFileSync(join(root, 'functions/openapi.json'), 'utf8'));

describe('client types', () => {
  it('lib/client/openapi-types.ts is what build:client-types generates from functions/openapi.json today', async () => {
    const script = pkg.scripts['build:client-types']!;
    const m = /^openapi-typescript (\S+) -o (\S+)(.*)$/.exec(script);
    expect(m, script).not.toBeNull();
    const [, input, output, flags] = m!;
    const cli = join(root, 'node_modules/openapi-typescript/bin/cli.js');
    // Without -o the CLI prints the same text it would write.
    const { stdout } = await run(process.execPath, [cli, input!, ...flags!.trim().split(/\s+/).filter(Boolean)], {
      cwd: root,
      maxBuffer: 16 * 1024 * 1024,
    });
    expect(readFileSync(join(root, output!), 'utf8'), 'run `npm run build:client-types` and commit the result').toBe(stdout);
  }, 60_000);

  it("A5/A3: the client splits appends and tails by the document's limits", () => {
    // A7: the server takes any count in one append (no maxItems), so the client splits by body size only, under 5 MB.
    expect(doc.components.schemas.AppendMessagesRequest.properties.messages.maxItems).toBeUndefined();
    expect(MAX_APPEND_BODY_BYTES).toBeLessThan(5_242_880);
    const tail = doc.paths['/sessions/{id}/messages'].get.parameters.find((p: { name: string }) => p.name === 'tail');
    expect(MAX_TAIL).toBe(tail.schema.maximum);
  });
});

describe('the @session-lineage/client package (lib/client/package.json)', () => {
  const client = JSON.parse(readFileSync(join(root, 'lib/client/package.json'), 'utf8'));

  it('is a workspace of the private root, ships only its build and README, needs only openapi-fetch, and the SDK as an optional peer', () => {
    expect(pkg.workspaces).toEqual(['lib/client']);
    expect(pkg.private).toBe(true);
    expect(client.exports['.']).toEqual({ types: './dist/index.d.ts', import: './dist/index.js', default: './dist/index.js' });
    expect(client.exports['./agents']).toEqual({ types: './dist/agents.d.ts', import: './dist/agents.js', default: './dist/agents.js' });
    expect(client.files).toEqual(['dist/**/*.js', 'dist/**/*.d.ts', 'README.md']);
    expect(client.scripts.prepack).toBe('npm run build');
    expect(Object.keys(client.dependencies)).toEqual(['openapi-fetch']);
    expect(client.dependencies['openapi-fetch']).toBe(pkg.dependencies['openapi-fetch']);
    expect(client.peerDependencies).toEqual({ '@openai/agents-core': `^${pkg.dependencies['@openai/agents-core']}` });
    expect(client.peerDependenciesMeta).toEqual({ '@openai/agents-core': { optional: true } });
  });

  it('bundles (both entries) to code with no imports at all, which loads in plain Node', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'client-bundle-'));
    try {
      const out = await build({
        stdin: { contents: "export * from './index.ts'; export * from './agents.ts';", resolveDir: join(root, 'lib/client'), loader: 'ts' },
        bundle: true,
        format: 'esm',
        platform: 'neutral',
        mainFields: ['module', 'main'],
        target: 'node20',
        write: false,
        metafile: true,
      });
      const code = out.outputFiles[0]!.text;
      expect(Object.values(out.metafile.outputs)[0]!.imports).toEqual([]);
      writeFileSync(join(dir, 'client.mjs'), code);
      writeFileSync(
        join(dir, 'check.mjs'),
        `import * as c from './client.mjs';
         const client = new c.LineageClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'slk_x' });
         const s = new c.LineageSession({ client });
         console.log(JSON.stringify({ client: typeof client.append, session: typeof s.getItems, errors: new c.SessionEndedError(409, {}, new Headers()) instanceof c.LineageApiError, key: c.newIdempotencyKey().length }));`,
      );
      const { stdout } = await run(process.execPath, [join(dir, 'check.mjs')], { cwd: dir });
      expect(JSON.parse(stdout)).toEqual({ client: 'function', session: 'function', errors: true, key: 40 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('client size', () => {
  it('stays under 30 KiB minified without the Agents SDK (the bench goal client-bundle-kb)', async () => {
    const r = await measureClientBundle();
    expect(CLIENT_BUNDLE_TARGET_KIB).toBe(30);
    expect(r.kib).toBeLessThan(CLIENT_BUNDLE_TARGET_KIB);
    expect(r.inputs.some((i) => i.path.includes('@openai/agents-core'))).toBe(false);
  });
});
