// How many lease refreshes the longest possible compaction makes: the compacting functions'
// timeouts (serverless.yml), the default lease TTL (lib/config.ts), the refresh interval rule
// (SPEC L5) and the commit safety margin (C9). Each refresh also extends the attempt record,
// which moves its attemptsByExpiry entry, so long compactions cost that index more.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEFAULT_COMMIT_SAFETY_MARGIN_MS } from '../../lib/compaction/compact-session.js';
import { loadConfig } from '../../lib/config.js';
import { defaultRefreshInterval } from '../../lib/lease/refresher.js';

export interface CompactionLength {
  fn: string;
  timeoutSeconds: number;
  leaseTtlMs: number;
  refreshIntervalMs: number;
  safetyMarginMs: number;
  /** Refreshes (each with an attempt-record extend) within timeout − margin. */
  maxRefreshes: number;
}

const serverless = fileURLToPath(new URL('../../serverless.yml', import.meta.url));

/** A function's timeout in serverless.yml (its own `timeout:`, else the provider's). */
function timeoutOf(yaml: string, fn: string): number {
  const block = new RegExp(`\\n {2}${fn}:\\n((?: {4}.*\\n|\\s*\\n)*)`).exec(yaml)?.[1] ?? '';
  const own = /\n? {4}timeout: (\d+)/.exec(block)?.[1];
  const provider = /\nprovider:\n(?: {2}.*\n|\s*\n)*? {2}timeout: (\d+)/.exec(yaml)?.[1];
  const t = Number(own ?? provider);
  if (!Number.isFinite(t) || t <= 0) throw new Error(`no timeout for ${fn} in serverless.yml`);
  return t;
}

export function compactionLengths(): CompactionLength[] {
  const yaml = readFileSync(serverless, 'utf8');
  const leaseTtlMs = loadConfig({}).leaseTtlMs;
  const refreshIntervalMs = defaultRefreshInterval(leaseTtlMs);
  return ['http', 'afterTurn'].map((fn) => {
    const timeoutSeconds = timeoutOf(yaml, fn);
    const maxRefreshes = Math.max(0, Math.floor((timeoutSeconds * 1000 - DEFAULT_COMMIT_SAFETY_MARGIN_MS) / refreshIntervalMs));
    return { fn, timeoutSeconds, leaseTtlMs, refreshIntervalMs, safetyMarginMs: DEFAULT_COMMIT_SAFETY_MARGIN_MS, maxRefreshes };
  });
}
