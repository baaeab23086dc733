// SPEC P4 on the deployable bundles: builds every function with infra/build.ts (into a temp dir,
// so a running `npm start` keeps its own) and checks the written metafiles. What a function
// does not use is not in its bundle: the sweep holds no tokenizer, API schemas or classic zod;
// the tokenizer is reached only through a dynamic import() in token-counting code, so it loads
// only when a compaction runs; every package is bundled once; each entry is under 1 MiB.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFunctions, inputBytes, META_FILE, packageOf, reachableOutputs, type BuiltFunction } from '../../../infra/build.js';

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

const fns = ['http', 'after-turn', 'sweep'];
const entryOf = (fn: string) => Object.keys(metas[fn]!.outputs).find((o) => o.endsWith(`${fn}/index.mjs`))!;
/** Inputs with bytes in the given outputs (esbuild lists tree-shaken files with 0 bytes). */
const inputsIn = (fn: string, outputs: Iterable<string>) =>
  [...inputBytes(metas[fn]!, outputs)].filter(([, bytes]) => bytes > 0).map(([input]) => input);
const staticOutputs = (fn: string) => reachableOutputs(metas[fn]!.outputs, entryOf(fn), ['import-statement']);
const allOutputs = (fn: string) => Object.keys(metas[fn]!.outputs);
const isTokenizer = (input: string) => packageOf(input)?.name === 'gpt-tokenizer';
const isClassicZod = (input: string) => packageOf(input)?.name === 'zod' && /\/zod\/(v4\/classic|v3)\//.test(input);

describe('bundles (SPEC P4)', () => {
  it('each function directory holds index.mjs, its chunks and a metafile describing exactly those files', () => {
    for (const fn of fns) {
      const files = readdirSync(join(outRoot, fn)).sort();
      expect(files).toContain('index.mjs');
      expect(files.filter((f) => f !== META_FILE)).toEqual(built[fn]!.files);
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
      for (const name of ['@aws-lambda-powertools/commons', '@aws-lambda-powertools/logger', '@smithy/core', '@aws-sdk/core']) {
        expect(dirs.get(name)?.size, `${fn}: ${name}`).toBe(1);
      }
    }
  });

  it('each entry bundle (index.mjs and the chunks it imports statically) is under 1 MiB', () => {
    const over = Object.fromEntries(fns.map((fn) => [fn, built[fn]!.bytes < MiB ? [] : [`${(built[fn]!.bytes / 1024).toFixed(1)} KiB`]]));
    expect(over).toEqual(none);
  });
});
