// Compaction metrics as CloudWatch sees them: the EMF records Powertools writes to stdout.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createServiceMetrics, recordCompaction, reasonDimension } from '../../../lib/telemetry/index.js';

interface EmfRecord {
  _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[] };
  [key: string]: unknown;
}

let lines: string[];

beforeEach(() => {
  lines = [];
  vi.stubEnv('POWERTOOLS_DEV', '');
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
  const write = process.stdout.write.bind(process.stdout);
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    if (text.includes('"_aws"')) {
      lines.push(...text.split('\n').filter(Boolean));
      return true;
    }
    return (write as (c: string | Uint8Array, ...r: unknown[]) => boolean)(chunk, ...rest);
  });
});

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

/** One entry per EMF record: metric name, value, and the dimension names and values it carries. */
function emitted(): { name: string; value: unknown; unit: string; namespace: string; dimensions: Record<string, unknown> }[] {
  return lines.map((line) => {
    const rec = JSON.parse(line) as EmfRecord;
    const directive = rec._aws.CloudWatchMetrics[0]!;
    expect(directive.Metrics).toHaveLength(1);
    expect(directive.Dimensions).toHaveLength(1);
    const name = directive.Metrics[0]!.Name;
    return {
      name,
      value: rec[name],
      unit: directive.Metrics[0]!.Unit,
      namespace: directive.Namespace,
      dimensions: Object.fromEntries(directive.Dimensions[0]!.map((d) => [d, rec[d]])),
    };
  });
}

const metrics = () => createServiceMetrics({ serviceName: 'session-lineage-test', metricsNamespace: 'SessionLineage' });

describe('recordCompaction (EMF)', () => {
  it('counts a commit by outcome and reason, with its commit latency and a 0 for LeaseUnavailable', () => {
    recordCompaction(metrics(), { outcome: 'compressed' }, { latencyMs: 42 });
    expect(emitted()).toEqual([
      {
        name: 'Compactions',
        value: 1,
        unit: 'Count',
        namespace: 'SessionLineage',
        dimensions: { service: 'session-lineage-test', outcome: 'compressed', reason: 'none' },
      },
      { name: 'LeaseUnavailable', value: 0, unit: 'Count', namespace: 'SessionLineage', dimensions: { service: 'session-lineage-test' } },
      {
        name: 'CommitLatency',
        value: 42,
        unit: 'Milliseconds',
        namespace: 'SessionLineage',
        dimensions: { service: 'session-lineage-test' },
      },
    ]);
  });

  it('C1: a lost lease race is LeaseContention, not LeaseUnavailable', () => {
    recordCompaction(metrics(), { outcome: 'skipped', reason: 'locked' });
    const byName = Object.fromEntries(emitted().map((m) => [m.name, m]));
    expect(byName.Compactions!.dimensions).toMatchObject({ outcome: 'skipped', reason: 'locked' });
    expect(byName.LeaseContention!.value).toBe(1);
    expect(byName.LeaseUnavailable!.value).toBe(0);
    expect(byName.CommitLatency).toBeUndefined();
  });

  it('C2: an unreachable lease backend is LeaseUnavailable = 1 (the alarm averages it into a rate)', () => {
    recordCompaction(metrics(), { outcome: 'skipped', reason: 'lease_unavailable' });
    const byName = Object.fromEntries(emitted().map((m) => [m.name, m]));
    expect(byName.LeaseUnavailable).toMatchObject({ value: 1, dimensions: { service: 'session-lineage-test' } });
    expect(byName.LeaseContention).toBeUndefined();
  });

  it('C13: a disabled (review) attempt never asked for the lease, so it is outside the unavailable rate', () => {
    recordCompaction(metrics(), { outcome: 'disabled', reason: 'review_origin' });
    expect(emitted().map((m) => m.name)).toEqual(['Compactions']);
  });

  it('keeps dimensions low-cardinality: no ids, unknown reasons collapse to "other"', () => {
    const m = metrics();
    recordCompaction(m, { outcome: 'noop', reason: 'unchanged' });
    recordCompaction(m, { outcome: 'skipped', reason: 'adopted' });
    recordCompaction(m, { outcome: 'skipped', reason: 'T#acme#S#3f2a-session-id' });
    recordCompaction(m, { outcome: 'cancelled' }, { latencyMs: Number.NaN });
    const records = emitted();
    const dims = records.filter((r) => r.name === 'Compactions').map((r) => r.dimensions);
    expect(dims.map((d) => `${String(d.outcome)}:${String(d.reason)}`)).toEqual([
      'noop:unchanged',
      'skipped:adopted',
      'skipped:other',
      'cancelled:none',
    ]);
    for (const r of records)
      expect(Object.keys(r.dimensions).sort()).toEqual(r.name === 'Compactions' ? ['outcome', 'reason', 'service'] : ['service']);
    expect(records.some((r) => r.name === 'CommitLatency')).toBe(false);
  });

  it('emits each record at once, whatever the caller buffers or never flushes on its own instance', () => {
    const m = metrics();
    m.addDimension('tenant', 'acme'); // a caller's buffered dimension must not leak into our records
    recordCompaction(m, { outcome: 'compressed' }, { latencyMs: 5 });
    expect(emitted().every((r) => !('tenant' in r.dimensions))).toBe(true);
    expect(emitted()).toHaveLength(3);
  });

  it('reasonDimension', () => {
    expect(reasonDimension(undefined)).toBe('none');
    expect(reasonDimension('lease_lost')).toBe('lease_lost');
    expect(reasonDimension('Stale!')).toBe('other');
  });
});
