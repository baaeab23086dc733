// `npm run cli`: runs the operator CLI (infra/cli.ts) from one esbuild bundle kept in
// node_modules/.cache/session-lineage-cli/, rebuilt only when a file it was built from changed.
// tsx compiled every module of the CLI and the AWS SDK on each call (6-8 s); loading the bundle takes
// well under a second, and a rebuild about one. Node runs this file itself (its type stripping: only
// erasable TypeScript here); the CLI's own modules use `.js` import specifiers, which only a bundler
// or tsx resolves, hence the bundle rather than type stripping for the whole CLI.
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const projectRoot = fileURLToPath(new URL('../..', import.meta.url));
const CLI_BUNDLE_DIR = join(projectRoot, 'node_modules', '.cache', 'session-lineage-cli');
const bundleFile = join(CLI_BUNDLE_DIR, 'cli.mjs');
const stampFile = join(CLI_BUNDLE_DIR, 'inputs.json');

interface Stamp {
  /** Date.now() before the build started: an input changed after it makes the bundle stale. */
  builtFrom: number;
  /** Every file the bundle was built from, relative to the project root. */
  inputs: string[];
}

function mtimeOf(file: string): number | undefined {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

function isFresh(): boolean {
  if (mtimeOf(bundleFile) === undefined) return false;
  let stamp: Stamp;
  try {
    stamp = JSON.parse(readFileSync(stampFile, 'utf8')) as Stamp;
  } catch {
    return false;
  }
  return stamp.inputs.every((input) => {
    const mtime = mtimeOf(join(projectRoot, input));
    return mtime !== undefined && mtime < stamp.builtFrom;
  });
}

/** Write-then-rename: a concurrent `npm run cli` never loads half a bundle. */
function writeAtomically(file: string, contents: Uint8Array | string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, contents);
  renameSync(tmp, file);
}

async function rebuild(): Promise<void> {
  const builtFrom = Date.now();
  const result = await build({
    entryPoints: [join(projectRoot, 'infra', 'cli.ts')],
    absWorkingDir: projectRoot,
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'esm',
    mainFields: ['module', 'main'],
    write: false,
    metafile: true,
    outfile: bundleFile,
    logLevel: 'warning',
    // CommonJS dependencies (the AWS SDK, ioredis) still call require / __dirname inside an ESM bundle.
    banner: {
      js: [
        "import { createRequire as __createRequire } from 'node:module';",
        "import { fileURLToPath as __fileURLToPath } from 'node:url';",
        "import { dirname as __pathDirname } from 'node:path';",
        'const require = __createRequire(import.meta.url);',
        'const __filename = __fileURLToPath(import.meta.url);',
        'const __dirname = __pathDirname(__filename);',
      ].join('\n'),
    },
  });
  const out = result.outputFiles.find((o) => o.path === bundleFile);
  if (!out) throw new Error(`esbuild wrote no ${bundleFile}`);
  mkdirSync(CLI_BUNDLE_DIR, { recursive: true });
  writeAtomically(bundleFile, out.contents);
  const stamp: Stamp = { builtFrom, inputs: Object.keys(result.metafile.inputs) };
  writeAtomically(stampFile, JSON.stringify(stamp));
}

if (!isFresh()) {
  try {
    await rebuild();
  } catch (err) {
    // esbuild has already printed the errors it found (logLevel warning).
    process.stderr.write(`error: cannot build the CLI: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
await import(pathToFileURL(bundleFile).href);
