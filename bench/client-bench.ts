// The client's size (issue 12 goal: under 30 KB minified, without the Agents SDK): lib/client
// bundled by esbuild as an agent's own bundler would, minified, with @openai/agents-core
// external (LineageSession imports only its types, so nothing of it would be bundled anyway).
// Runs alone with `tsx bench/client-bench.ts`.
import { gzipSync } from 'node:zlib';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import type { GoalRow } from './bundle-bench.js';

export const CLIENT_BUNDLE_TARGET_KIB = 30;

export interface ClientBundleResult {
  bytes: number;
  kib: number;
  gzipKib: number;
  /** Bytes each input contributes to the minified output (openapi-fetch vs our modules). */
  inputs: { path: string; kib: number }[];
  goal: GoalRow;
}

// Both entries of @session-lineage/client: the HTTP client and LineageSession.
const clientDir = fileURLToPath(new URL('../lib/client/', import.meta.url));
const kib = (bytes: number) => Math.round((bytes / 1024) * 10) / 10;

export async function benchClientBundle(): Promise<ClientBundleResult> {
  const out = await build({
    stdin: { contents: "export * from './index.ts'; export * from './agents.ts';", resolveDir: clientDir, loader: 'ts' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    target: 'node20',
    external: ['@openai/agents-core'],
    legalComments: 'none',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const file = out.outputFiles[0]!;
  const output = Object.values(out.metafile.outputs)[0]!;
  const inputs = Object.entries(output.inputs)
    .map(([path, i]) => ({ path, kib: kib(i.bytesInOutput) }))
    .sort((a, b) => b.kib - a.kib);
  const measured = kib(file.contents.byteLength);
  return {
    bytes: file.contents.byteLength,
    kib: measured,
    gzipKib: kib(gzipSync(file.contents).byteLength),
    inputs,
    goal: { id: 'client-bundle-kb', measured, target: CLIENT_BUNDLE_TARGET_KIB, unit: 'KiB', met: measured < CLIENT_BUNDLE_TARGET_KIB },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const r = await benchClientBundle();
  console.log(
    `lib/client minified: ${r.kib} KiB (${r.bytes} bytes), gzip ${r.gzipKib} KiB; goal < ${CLIENT_BUNDLE_TARGET_KIB} KiB: ${r.goal.met ? 'met' : 'NOT met'}`,
  );
  for (const i of r.inputs) console.log(`  ${i.kib.toFixed(1).padStart(6)} KiB  ${i.path}`);
}
