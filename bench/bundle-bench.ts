// Lambda bundles: size per function (esbuild metafile) and module init cost (a fresh node
// process importing the bundle vs importing an empty module).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { bundleOptions, listHandlers } from '../infra/build.js';
import { compare, round, type Comparison } from './stats.js';

const run = promisify(execFile);

export interface BundleRow {
  fn: string;
  bytes: number;
  kib: number;
  /** Largest inputs by bytes in the output. */
  topInputs: { path: string; kib: number }[];
  /** In-process `await import(bundle)` vs `await import(empty)`, each in a fresh node process. */
  importMs: Comparison;
  /** Whole process (spawn to exit) importing the bundle vs the empty module. */
  processMs: Comparison;
}

/** The options of infra/build.ts (the deployable bundles) plus a metafile for per-input sizes. */
const benchBundleOptions = { ...bundleOptions, metafile: true } as const;

async function importTime(file: string, env: NodeJS.ProcessEnv): Promise<{ importMs: number; processMs: number }> {
  const code = `const t=performance.now(); await import(${JSON.stringify(pathToFileURL(file).href)}); console.log(performance.now()-t);`;
  const t0 = performance.now();
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', code], { env });
  return { importMs: Number(stdout.trim().split('\n').pop()), processMs: performance.now() - t0 };
}

export async function benchBundles(functionsDir: string, runs: number, env: NodeJS.ProcessEnv): Promise<BundleRow[]> {
  const entries = (await listHandlers()).map((f) => join(functionsDir, f));
  if (entries.length === 0) return [];
  const outdir = mkdtempSync(join(tmpdir(), 'bench-bundles-'));
  try {
    const empty = join(outdir, 'empty.mjs');
    writeFileSync(empty, 'export {};\n');
    const rows: BundleRow[] = [];
    for (const entry of entries) {
      const fn = basename(entry, '.ts');
      const outfile = join(outdir, `${fn}.mjs`);
      const res = await build({ ...benchBundleOptions, entryPoints: [entry], outfile, logLevel: 'silent' });
      const out = res.metafile.outputs[Object.keys(res.metafile.outputs).find((k) => k.endsWith(`${fn}.mjs`))!]!;
      const topInputs = Object.entries(out.inputs)
        .sort((a, b) => b[1].bytesInOutput - a[1].bytesInOutput)
        .slice(0, 3)
        .map(([path, v]) => ({ path: path.replace(/^node_modules\//, ''), kib: round(v.bytesInOutput / 1024, 1) }));
      const b: { importMs: number; processMs: number }[] = [];
      const e: { importMs: number; processMs: number }[] = [];
      for (let i = 0; i < runs; i++) {
        if (i % 2 === 0) {
          b.push(await importTime(outfile, env));
          e.push(await importTime(empty, env));
        } else {
          e.push(await importTime(empty, env));
          b.push(await importTime(outfile, env));
        }
      }
      rows.push({
        fn,
        bytes: out.bytes,
        kib: round(out.bytes / 1024, 1),
        topInputs,
        importMs: compare(
          b.map((x) => x.importMs),
          e.map((x) => x.importMs),
        ),
        processMs: compare(
          b.map((x) => x.processMs),
          e.map((x) => x.processMs),
        ),
      });
    }
    return rows;
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
