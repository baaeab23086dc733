// SPEC P4 / issue 13: the tokenizer's 2.6 MB table is loaded only when something counts tokens.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const tokensModule = join(root, 'lib/items/tokens.ts');

describe('P4: the tokenizer is loaded lazily', () => {
  it('P4: a fresh node process that imports lib/items/tokens.ts loads gpt-tokenizer only once loadTokenCounter() is called', () => {
    const dir = mkdtempSync(join(tmpdir(), 'lazy-tokenizer-'));
    const log = join(dir, 'loaded.log');
    try {
      // A resolve hook (it runs on the loader thread) appends every resolved URL to a file.
      const hooks = `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(${JSON.stringify(log)}, result.url + '\\n');
  return result;
}`;
      const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});`;
      const script = `import { readFileSync, writeFileSync } from 'node:fs';
const loaded = () => readFileSync(${JSON.stringify(log)}, 'utf8').includes('gpt-tokenizer');
writeFileSync(${JSON.stringify(log)}, '');
const tokens = await import(${JSON.stringify(pathToFileURL(tokensModule).href)});
const afterImport = loaded();
const requestedBefore = tokens.tokenizerRequested();
const counter = await tokens.loadTokenCounter();
console.log(JSON.stringify({ afterImport, requestedBefore, afterLoad: loaded(), requestedAfter: tokens.tokenizerRequested(), hello: counter.countText('hello world') }));`;
      const child = spawnSync(
        process.execPath,
        ['--import', 'tsx', '--import', `data:text/javascript,${encodeURIComponent(register)}`, '--input-type=module', '-e', script],
        {
          cwd: root,
          encoding: 'utf8',
          timeout: 60_000,
        },
      );
      expect(child.stderr).not.toMatch(/Error/);
      const result = JSON.parse(child.stdout.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
      expect(result).toEqual({ afterImport: false, requestedBefore: false, afterLoad: true, requestedAfter: true, hello: 2 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it('P4: bundled with code splitting, the token module is small and the o200k table sits in a chunk behind a dynamic import', async () => {
    const outdir = mkdtempSync(join(tmpdir(), 'lazy-tokenizer-bundle-'));
    try {
      const result = await build({
        entryPoints: [tokensModule],
        bundle: true,
        splitting: true,
        format: 'esm',
        platform: 'node',
        minify: true,
        outdir,
        metafile: true,
        logLevel: 'silent',
      });
      const outputs = result.metafile.outputs;
      const entryFile = Object.keys(outputs).find((f) => outputs[f]!.entryPoint !== undefined)!;
      // Everything loaded when the module is imported: the entry and the chunks it imports statically.
      const eager = new Set<string>();
      const visit = (file: string): void => {
        if (eager.has(file)) return;
        eager.add(file);
        for (const i of outputs[file]!.imports) if (i.kind === 'import-statement' && outputs[i.path]) visit(i.path);
      };
      visit(entryFile);
      const eagerInputs = [...eager].flatMap((f) => Object.keys(outputs[f]!.inputs));
      expect(eagerInputs.filter((i) => i.includes('gpt-tokenizer'))).toEqual([]);
      expect(outputs[entryFile]!.imports.some((i) => i.kind === 'dynamic-import')).toBe(true);
      expect([...eager].reduce((n, f) => n + outputs[f]!.bytes, 0)).toBeLessThan(16 * 1024);
      const chunks = readdirSync(outdir).map((f) => statSync(join(outdir, f)).size);
      expect(Math.max(...chunks)).toBeGreaterThan(1024 * 1024); // the table did move to its own chunk
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  }, 90_000);

  it('P4: nothing under lib/ or functions/ imports gpt-tokenizer statically', () => {
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (name.endsWith('.ts') && /^\s*import\s[^(]*['"]gpt-tokenizer/m.test(readFileSync(path, 'utf8'))) offenders.push(path);
      }
    };
    walk(join(root, 'lib'));
    walk(join(root, 'functions'));
    expect(offenders).toEqual([]);
  });
});
