// Bundles a TypeScript child script that tests spawn with plain node: a tsx-transpiled child
// costs seconds per spawn on a busy 2-core box. Callers put the bundle under node_modules/.cache
// so its external packages (@openai/agents-core, zod, ioredis) resolve from the project.
import { build } from 'esbuild';

export async function bundleChild(source: string, outfile: string): Promise<void> {
  await build({
    entryPoints: [source],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    packages: 'external',
    logLevel: 'silent',
  });
}
