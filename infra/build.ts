// `npm run build`: bundles each functions/*.ts Lambda handler with esbuild into its own
// .esbuild/<name>/index.mjs (what serverless.yml packages), and prints the sizes.
import { mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const projectRoot = fileURLToPath(new URL('..', import.meta.url));
export const outRoot = join(projectRoot, '.esbuild');

// ESM bundles of CJS dependencies (ioredis, the AWS SDK) still call require/__dirname.
const banner = [
  "import { createRequire as __createRequire } from 'node:module';",
  "import { fileURLToPath as __fileURLToPath } from 'node:url';",
  "import { dirname as __pathDirname } from 'node:path';",
  'const require = __createRequire(import.meta.url);',
  'const __filename = __fileURLToPath(import.meta.url);',
  'const __dirname = __pathDirname(__filename);',
].join('\n');

/** The esbuild options of every deployable bundle (the benchmarks build with the same). */
export const bundleOptions = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  banner: { js: banner },
  minify: true,
  sourcemap: false,
  legalComments: 'none',
} as const;

export interface BuiltFunction {
  name: string;
  entry: string;
  outfile: string;
  bytes: number;
}

export async function listHandlers(): Promise<string[]> {
  const dir = join(projectRoot, 'functions');
  return (await readdir(dir)).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.endsWith('.test.ts')).sort();
}

async function bundleOne(file: string): Promise<BuiltFunction> {
  const name = basename(file, '.ts');
  const entry = join(projectRoot, 'functions', file);
  const outdir = join(outRoot, name);
  const result = await build({
    entryPoints: [entry],
    ...bundleOptions,
    outExtension: { '.js': '.mjs' },
    write: false,
    logLevel: 'warning',
    outdir,
  });
  const output = result.outputFiles[0];
  if (!output) throw new Error(`esbuild produced nothing for ${file}`);
  await mkdir(outdir, { recursive: true });
  // Write-then-rename: a serverless-offline process loading the bundle never sees half a file.
  const outfile = join(outdir, 'index.mjs');
  const tmp = `${outfile}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(tmp, output.contents);
  await rename(tmp, outfile);
  return { name, entry, outfile, bytes: output.contents.byteLength };
}

export async function buildFunctions(): Promise<BuiltFunction[]> {
  const files = await listHandlers();
  return Promise.all(files.map(bundleOne));
}

function formatBytes(n: number): string {
  return n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(2)} MB` : `${(n / 1024).toFixed(1)} kB`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const built = await buildFunctions();
  for (const b of built) console.log(`${b.name.padEnd(12)} ${formatBytes(b.bytes).padStart(10)}  ${relative(projectRoot, b.outfile)}`);
}
