// The client's size (issue 12 goal: under 30 KB minified, without the Agents SDK): lib/client
// bundled by esbuild as an agent's own bundler would, minified, with @openai/agents-core
// external (LineageSession imports only its types, so nothing of it would be bundled anyway).
// Shared by the bench (bench/client-bench.ts, the goal row) and the test that holds the goal.
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const CLIENT_BUNDLE_TARGET_KIB = 30;

export interface ClientBundleResult {
  bytes: number;
  kib: number;
  gzipKib: number;
  /** Bytes each input contributes to the minified output (openapi-fetch vs our modules). */
  inputs: { path: string; kib: number }[];
}

// Both entries of @session-lineage/client: the HTTP client and LineageSession.
const clientDir = fileURLToPath(new URL('../lib/client/', import.meta.url));
const kib = (bytes: number) => Math.round((bytes / 1024) * 10) / 10;

export async function measureClientBundle(): Promise<ClientBundleResult> {
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
  };
}
