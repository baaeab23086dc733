// `npm run build`: bundles each functions/*.ts Lambda handler with esbuild into its own
// .esbuild/<name>/ (what serverless.yml packages): index.mjs, the chunks it loads lazily
// (code-split ESM: a dynamic import() becomes a file loaded only when that code runs),
// meta.json (esbuild's metafile of exactly those files) and the static files the function serves
// from disk rather than from its JS bundle (FUNCTION_ASSETS, gzipped), and prints the sizes.
import { createRequire } from 'node:module';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { constants as zlib, gunzip as gunzipCallback, gzip as gzipCallback } from 'node:zlib';
import { build, type BuildOptions, type Metafile, type Plugin } from 'esbuild';
import { gzippedAssetName, SWAGGER_UI_ASSETS, type DocsAsset } from '../lib/api/api-docs.js';

export const projectRoot = fileURLToPath(new URL('..', import.meta.url));
export const outRoot = join(projectRoot, '.esbuild');
export const META_FILE = 'meta.json';

/**
 * Static files a function serves from disk (read lazily, relative to its bundle) instead of
 * carrying them in its JS: Swagger UI is 1.7 MB of text the docs function only sends, never runs
 * (SPEC P4: each bundle under 1 MB). Written gzipped as `<file>.gz` into the function's folder,
 * which serverless.yml packages whole (`.esbuild/<fn>/**`) and serverless-offline runs from.
 */
export const FUNCTION_ASSETS: Readonly<Record<string, readonly DocsAsset[]>> = { docs: SWAGGER_UI_ASSETS };

const gzip = promisify(gzipCallback);
const gunzip = promisify(gunzipCallback);
const requireFromRoot = createRequire(join(projectRoot, 'package.json'));

// ESM bundles of CJS dependencies (ioredis, the AWS SDK) still call require/__dirname.
const banner = [
  "import { createRequire as __createRequire } from 'node:module';",
  "import { fileURLToPath as __fileURLToPath } from 'node:url';",
  "import { dirname as __pathDirname } from 'node:path';",
  'const require = __createRequire(import.meta.url);',
  'const __filename = __fileURLToPath(import.meta.url);',
  'const __dirname = __pathDirname(__filename);',
].join('\n');

const libDir = join(projectRoot, 'lib') + sep;
const SKIP = Symbol('own-modules-resolving');

/**
 * Our lib/ modules only declare things; none does work on import. Telling esbuild so lets it drop
 * a module whose exports a bundle does not use, with everything only it imports: lib/runtime.ts
 * imports the API and compaction modules for httpDeps, yet the sweep bundle holds neither (a
 * top-level `z.object(...)` in an unused schema module would otherwise be kept "for its effects").
 */
const ownModulesAreSideEffectFree: Plugin = {
  name: 'own-modules-are-side-effect-free',
  setup(b) {
    b.onResolve({ filter: /^\.\.?\// }, async (args) => {
      if (args.pluginData === SKIP) return undefined;
      const resolved = await b.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: SKIP,
      });
      if (resolved.errors.length > 0 || !resolved.path.startsWith(libDir)) return undefined;
      return { path: resolved.path, sideEffects: false };
    });
  },
};

/** The esbuild options of every deployable bundle (the benchmarks build with the same). */
export const bundleOptions = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  splitting: true,
  mainFields: ['module', 'main'],
  entryNames: 'index',
  chunkNames: '[name]-[hash]',
  outExtension: { '.js': '.mjs' },
  banner: { js: banner },
  minify: true,
  sourcemap: false,
  legalComments: 'none',
  metafile: true,
  // Metafile paths are then relative to the project root, wherever the build runs from.
  absWorkingDir: projectRoot,
  plugins: [ownModulesAreSideEffectFree],
} satisfies BuildOptions;

export interface BuiltFunction {
  name: string;
  entry: string;
  outdir: string;
  /** `<outdir>/index.mjs` */
  outfile: string;
  /** What loading the handler loads: index.mjs plus the chunks it imports statically. */
  bytes: number;
  /** Chunks loaded only by a dynamic import() that runs (e.g. the tokenizer when a compaction runs). */
  lazyBytes: number;
  /** Every JS file written (relative to outdir): index.mjs and its chunks. */
  files: string[];
  /** The gzipped static files written beside them (FUNCTION_ASSETS), and their bytes on disk. */
  assets: string[];
  assetBytes: number;
  /** Metafile output paths: the entry and its static imports; the lazily loaded rest. */
  entryOutputs: string[];
  lazyOutputs: string[];
  metafile: Metafile;
}

export async function listHandlers(): Promise<string[]> {
  const dir = join(projectRoot, 'functions');
  return (await readdir(dir)).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.endsWith('.test.ts')).sort();
}

type Outputs = Metafile['outputs'];

/** Outputs reachable from `from` over the given import kinds (internal chunks only, never node: builtins). */
export function reachableOutputs(outputs: Outputs, from: string, kinds: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const visit = (path: string) => {
    if (seen.has(path) || !outputs[path]) return;
    seen.add(path);
    for (const i of outputs[path].imports) if (!i.external && kinds.includes(i.kind)) visit(i.path);
  };
  visit(from);
  return seen;
}

/**
 * The npm package a metafile input belongs to: its name (`@scope/name` or `name`) and the directory
 * it was installed in. Two directories for one name mean the package is bundled twice. Undefined for our own files.
 */
export function packageOf(input: string): { name: string; dir: string } | undefined {
  const at = input.lastIndexOf('node_modules/');
  if (at < 0) return undefined;
  const [first = '', second = ''] = input.slice(at + 'node_modules/'.length).split('/');
  const name = first.startsWith('@') ? `${first}/${second}` : first;
  return { name, dir: input.slice(0, at + 'node_modules/'.length + name.length) };
}

/** Bytes each input contributes to the given outputs. */
export function inputBytes(meta: Metafile, outputs: Iterable<string>): Map<string, number> {
  const bytes = new Map<string, number>();
  for (const o of outputs) {
    for (const [input, { bytesInOutput }] of Object.entries(meta.outputs[o]?.inputs ?? {})) {
      bytes.set(input, (bytes.get(input) ?? 0) + bytesInOutput);
    }
  }
  return bytes;
}

/**
 * esbuild still emits a chunk for a dynamic import() inside code it tree-shook away (the sweep
 * bundle would ship an unreferenced tokenizer chunk); keep only what the entry can load, and a
 * metafile describing exactly that.
 */
function pruneToEntry(meta: Metafile, entryOut: string): { meta: Metafile; statics: Set<string>; all: Set<string> } {
  const all = reachableOutputs(meta.outputs, entryOut, ['import-statement', 'dynamic-import']);
  const statics = reachableOutputs(meta.outputs, entryOut, ['import-statement']);
  const outputs = Object.fromEntries(Object.entries(meta.outputs).filter(([p]) => all.has(p)));
  const used = new Set(Object.values(outputs).flatMap((o) => Object.keys(o.inputs)));
  const inputs = Object.fromEntries(Object.entries(meta.inputs).filter(([p]) => used.has(p)));
  return { meta: { inputs, outputs }, statics, all };
}

/** Write-then-rename, so a serverless-offline process loading the bundle never sees half a file. */
async function writeAtomically(file: string, contents: Uint8Array | string): Promise<void> {
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(tmp, contents);
  await rename(tmp, file);
}

/**
 * Gzips each asset into outdir, once: an existing `<file>.gz` whose content is the source's
 * (npm gives every installed file the same mtime, so content is compared, not dates) is kept.
 */
async function writeAssets(assets: readonly DocsAsset[], outdir: string): Promise<{ name: string; bytes: number }[]> {
  return Promise.all(
    assets.map(async (a) => {
      const source = await readFile(requireFromRoot.resolve(a.source));
      const target = join(outdir, gzippedAssetName(a.file));
      const existing = await readFile(target).catch(() => undefined);
      if (
        existing &&
        (await gunzip(existing).then(
          (b) => b.equals(source),
          () => false,
        ))
      ) {
        return { name: basename(target), bytes: existing.length };
      }
      const gz = await gzip(source, { level: zlib.Z_BEST_COMPRESSION });
      await writeAtomically(target, gz);
      return { name: basename(target), bytes: gz.length };
    }),
  );
}

export async function bundleFunction(file: string, root = outRoot): Promise<BuiltFunction> {
  const name = basename(file, '.ts');
  const entry = join(projectRoot, 'functions', file);
  const outdir = join(root, name);
  const result = await build({ ...bundleOptions, entryPoints: [entry], write: false, logLevel: 'warning', outdir });
  const rel = (abs: string) => relative(projectRoot, abs).split(sep).join('/');
  const entryOut = rel(join(outdir, 'index.mjs'));
  const { meta, statics, all } = pruneToEntry(result.metafile, entryOut);
  const written = result.outputFiles.filter((o) => all.has(rel(o.path)));
  await mkdir(outdir, { recursive: true });
  // Chunks before the entry: the new index.mjs never points at a chunk that is not there yet.
  const entryFile = written.find((o) => rel(o.path) === entryOut);
  if (!entryFile) throw new Error(`esbuild produced no index.mjs for ${file}`);
  for (const o of written) if (o !== entryFile) await writeAtomically(o.path, o.contents);
  await writeAtomically(entryFile.path, entryFile.contents);
  await writeAtomically(join(outdir, META_FILE), JSON.stringify(meta, null, 1));
  const assets = await writeAssets(FUNCTION_ASSETS[name] ?? [], outdir);
  // Stale chunks of an earlier build would be packaged too (serverless.yml takes .esbuild/<fn>/**).
  const keep = new Set([...written.map((o) => basename(o.path)), ...assets.map((a) => a.name), META_FILE]);
  for (const f of await readdir(outdir)) if (!keep.has(f) && !f.endsWith('.tmp')) await rm(join(outdir, f), { force: true });
  const bytesOf = (set: Set<string>) => [...set].reduce((n, p) => n + (meta.outputs[p]?.bytes ?? 0), 0);
  return {
    name,
    entry,
    outdir,
    outfile: entryFile.path,
    bytes: bytesOf(statics),
    lazyBytes: bytesOf(all) - bytesOf(statics),
    files: written.map((o) => relative(outdir, o.path)).sort(),
    assets: assets.map((a) => a.name).sort(),
    assetBytes: assets.reduce((n, a) => n + a.bytes, 0),
    entryOutputs: [...statics].sort(),
    lazyOutputs: [...all].filter((p) => !statics.has(p)).sort(),
    metafile: meta,
  };
}

export async function buildFunctions(root = outRoot): Promise<BuiltFunction[]> {
  const files = await listHandlers();
  return Promise.all(files.map((f) => bundleFunction(f, root)));
}

function formatBytes(n: number): string {
  return n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(2)} MB` : `${(n / 1024).toFixed(1)} kB`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const built = await buildFunctions();
  for (const b of built) {
    const lazy = b.lazyBytes > 0 ? ` (+ ${formatBytes(b.lazyBytes)} lazy)` : '';
    const assets = b.assets.length > 0 ? ` (+ ${b.assets.length} gzipped assets, ${formatBytes(b.assetBytes)})` : '';
    console.log(
      `${b.name.padEnd(12)} ${formatBytes(b.bytes).padStart(10)}${lazy}${assets}  ${relative(projectRoot, dirname(b.outfile))}/ ${b.files.length} files`,
    );
  }
}
