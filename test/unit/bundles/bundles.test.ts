// SPEC P4 on the deployable bundles: builds every function with infra/build.ts (into a temp dir,
// so a running `npm start` keeps its own) and checks the written metafiles. What a function
// does not use is not in its bundle: the sweep holds no tokenizer, API schemas or classic zod;
// the tokenizer is reached only through a dynamic import() in token-counting code, so it loads
// only when a compaction runs; every package is bundled once; each entry is under 1 MiB. The docs
// function serves Swagger UI (1.7 MB) from gzipped files beside its bundle, not from its JS.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildFunctions,
  bundleFunction,
  FUNCTION_ASSETS,
  inputBytes,
  META_FILE,
  packageOf,
  projectRoot,
  reachableOutputs,
  type BuiltFunction,
} from '../../../infra/build.js';
import { gzippedAssetName, SWAGGER_UI_ASSETS } from '../../../lib/api/api-docs.js';

const MiB = 1024 * 1024;
const outRoot = mkdtempSync(join(tmpdir(), 'bundles-test-'));
let built: Record<string, BuiltFunction>;
let metas: Record<string, Metafile>;

beforeAll(async () => {
  built = Object.fromEntries((await buildFunctions(outRoot)).map((b) => [b.name, b]));
  metas = Object.fromEntries(
    Object.keys(built).map((fn) => [fn, JSON.parse(readFileSync(join(outRoot, fn, META_FILE), 'utf8')) as Metafile]),
  );
}, 120_000);
afterAll(() => rmSync(outRoot, { recursive: true, force: true }));

const fns = ['http', 'after-turn', 'sweep', 'docs'];
/** The functions that talk to AWS and Redis; docs only answers from its own files. */
const awsFns = ['http', 'after-turn', 'sweep'];
const entryOf = (fn: string) => Object.keys(metas[fn]!.outputs).find((o) => o.endsWith(`${fn}/index.mjs`))!;
/** Inputs with bytes in the given outputs (esbuild lists tree-shaken files with 0 bytes). */
const inputsIn = (fn: string, outputs: Iterable<string>) =>
  [...inputBytes(metas[fn]!, outputs)].filter(([, bytes]) => bytes > 0).map(([input]) => input);
const staticOutputs = (fn: string) => reachableOutputs(metas[fn]!.outputs, entryOf(fn), ['import-statement']);
const allOutputs = (fn: string) => Object.keys(metas[fn]!.outputs);
const isTokenizer = (input: string) => packageOf(input)?.name === 'gpt-tokenizer';
const isClassicZod = (input: string) => packageOf(input)?.name === 'zod' && /\/zod\/(v4\/classic|v3)\//.test(input);

describe('bundles (SPEC P4)', () => {
  it('each function directory holds index.mjs, its chunks, its gzipped assets and a metafile describing exactly the JS', () => {
    for (const fn of fns) {
      const files = readdirSync(join(outRoot, fn)).sort();
      expect(files).toContain('index.mjs');
      expect(built[fn]!.assets).toEqual((FUNCTION_ASSETS[fn] ?? []).map((a) => gzippedAssetName(a.file)).sort());
      expect(files.filter((f) => f !== META_FILE)).toEqual([...built[fn]!.files, ...built[fn]!.assets].sort());
      expect(
        allOutputs(fn)
          .map((o) => o.slice(o.lastIndexOf('/') + 1))
          .sort(),
      ).toEqual(built[fn]!.files);
    }
  });

  it('the sweep bundle holds neither gpt-tokenizer, nor the API schemas or any API / compaction code, nor classic zod', () => {
    const inputs = inputsIn('sweep', allOutputs('sweep'));
    expect(inputs.filter(isTokenizer)).toEqual([]);
    expect(inputs.filter((i) => i.startsWith('lib/api/') || i.startsWith('lib/compaction/') || i.startsWith('lib/compressors/'))).toEqual(
      [],
    );
    expect(inputs.filter(isClassicZod)).toEqual([]);
  });

  // Each check below collects its findings for every bundle, so a failure shows them all at once.
  const none = Object.fromEntries(fns.map((fn) => [fn, []]));

  it('no entry reaches gpt-tokenizer statically: it sits only in lazily loaded chunks', () => {
    const found = Object.fromEntries(
      fns.map((fn) => [
        fn,
        [
          ...new Set(
            inputsIn(fn, staticOutputs(fn))
              .filter(isTokenizer)
              .map(() => 'gpt-tokenizer'),
          ),
        ],
      ]),
    );
    expect(found).toEqual(none);
  });

  it('only token-counting code imports gpt-tokenizer, and only with a dynamic import()', () => {
    const edges = (fn: string) =>
      Object.entries(metas[fn]!.inputs).flatMap(([importer, { imports }]) =>
        imports.filter((i) => !isTokenizer(importer) && isTokenizer(i.path)).map((i) => ({ importer, kind: i.kind })),
      );
    // The compacting bundles do count tokens: no edge at all would mean this looks in the wrong place.
    for (const fn of ['http', 'after-turn']) expect(edges(fn).length, `${fn}: nothing imports gpt-tokenizer`).toBeGreaterThan(0);
    const wrong = Object.fromEntries(
      fns.map((fn) => [
        fn,
        edges(fn)
          .filter((e) => e.kind !== 'dynamic-import' || !/^lib\/(compressors|items)\//.test(e.importer))
          .map((e) => `${e.importer} (${e.kind})`),
      ]),
    );
    expect(wrong).toEqual(none);
  });

  it('classic zod is in no bundle (validation uses zod/mini)', () => {
    const found = Object.fromEntries(
      fns.map((fn) => {
        if (!inputsIn(fn, allOutputs(fn)).some(isClassicZod)) return [fn, []];
        // Name our modules that pull it in, so the fix is obvious.
        const importers = Object.entries(metas[fn]!.inputs)
          .filter(
            ([p, { imports }]) =>
              !p.includes('node_modules/') && imports.some((i) => i.path === 'node_modules/zod/index.js' || isClassicZod(i.path)),
          )
          .map(([p]) => p);
        return [fn, importers.length > 0 ? importers : ['classic zod (through a dependency)']];
      }),
    );
    expect(found).toEqual(none);
  });

  it('every package is bundled from one install: one Powertools commons, one AWS SDK core, one smithy core', () => {
    for (const fn of fns) {
      const dirs = new Map<string, Set<string>>();
      for (const input of inputsIn(fn, allOutputs(fn))) {
        const p = packageOf(input);
        if (p) dirs.set(p.name, (dirs.get(p.name) ?? new Set()).add(p.dir));
      }
      const twice = [...dirs].filter(([, d]) => d.size > 1).map(([name, d]) => `${name}: ${[...d].join(', ')}`);
      expect(twice, `${fn}: packages bundled twice`).toEqual([]);
      // docs uses none of these (checked below: it bundles no package at all), so "exactly one" is for the others.
      if (!awsFns.includes(fn)) continue;
      for (const name of ['@aws-lambda-powertools/commons', '@aws-lambda-powertools/logger', '@smithy/core', '@aws-sdk/core']) {
        expect(dirs.get(name)?.size, `${fn}: ${name}`).toBe(1);
      }
    }
  });

  it('the docs bundle holds no npm package (no Swagger UI, no SDK, no Powertools) and no lib/ module but lib/api/api-docs.ts', () => {
    const inputs = inputsIn('docs', allOutputs('docs'));
    expect(inputs.filter((i) => packageOf(i))).toEqual([]);
    expect(inputs.filter((i) => i.startsWith('lib/'))).toEqual(['lib/api/api-docs.ts']);
    // Everything it loads, lazily or not, is JS we wrote plus the document: all of it is under 1 MiB.
    expect(built.docs!.bytes + built.docs!.lazyBytes).toBeLessThan(MiB);
  });

  it("Swagger UI sits beside the docs bundle as gzip files whose content is the npm package's, and a rebuild gzips only what changed", async () => {
    const dir = join(outRoot, 'docs');
    for (const a of SWAGGER_UI_ASSETS) {
      const source = readFileSync(join(projectRoot, 'node_modules', a.source));
      const gz = readFileSync(join(dir, gzippedAssetName(a.file)));
      expect(gunzipSync(gz).equals(source), a.file).toBe(true);
      // Actually compressed (the Swagger UI bundle is ~1.7 MB, ~460 kB gzipped).
      expect(gz.length).toBeLessThan(source.length / 2);
    }
    const [kept, stale] = SWAGGER_UI_ASSETS.map((a) => join(dir, gzippedAssetName(a.file))) as [string, string];
    const keptMtime = statSync(kept).mtimeMs;
    writeFileSync(stale, 'not gzip');
    const rebuilt = await bundleFunction('docs.ts', outRoot);
    expect(statSync(kept).mtimeMs).toBe(keptMtime);
    expect(gunzipSync(readFileSync(stale)).equals(readFileSync(join(projectRoot, 'node_modules', SWAGGER_UI_ASSETS[1]!.source)))).toBe(
      true,
    );
    expect(rebuilt.assetBytes).toBe(statSync(kept).size + statSync(stale).size);
  }, 60_000);

  it('each entry bundle (index.mjs and the chunks it imports statically) is under 1 MiB', () => {
    const over = Object.fromEntries(fns.map((fn) => [fn, built[fn]!.bytes < MiB ? [] : [`${(built[fn]!.bytes / 1024).toFixed(1)} KiB`]]));
    expect(over).toEqual(none);
  });
});
