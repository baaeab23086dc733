// The client bundle's goal row (client-bundle-kb): measured by infra/client-bundle.ts.
// Runs alone with `tsx bench/client-bench.ts`.
import { pathToFileURL } from 'node:url';
import { CLIENT_BUNDLE_TARGET_KIB, measureClientBundle, type ClientBundleResult } from '../infra/client-bundle.js';
import type { GoalRow } from './bundle-bench.js';

export async function benchClientBundle(): Promise<ClientBundleResult & { goal: GoalRow }> {
  const r = await measureClientBundle();
  return {
    ...r,
    goal: { id: 'client-bundle-kb', measured: r.kib, target: CLIENT_BUNDLE_TARGET_KIB, unit: 'KiB', met: r.kib < CLIENT_BUNDLE_TARGET_KIB },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const r = await benchClientBundle();
  console.log(
    `lib/client minified: ${r.kib} KiB (${r.bytes} bytes), gzip ${r.gzipKib} KiB; goal < ${CLIENT_BUNDLE_TARGET_KIB} KiB: ${r.goal.met ? 'met' : 'NOT met'}`,
  );
  for (const i of r.inputs) console.log(`  ${i.kib.toFixed(1).padStart(6)} KiB  ${i.path}`);
}
