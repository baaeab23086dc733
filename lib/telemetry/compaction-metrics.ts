// EMF metrics for compaction attempts (issue 14), emitted with Powertools Metrics.
//
// Each metric is its own EMF record (singleMetric), so it carries exactly the dimensions the
// CloudWatch alarms in serverless.yml match on, whatever else the caller adds to its buffered
// Metrics instance, and nothing depends on the caller flushing. Dimensions stay low-cardinality:
// `service` (Powertools' default) plus `outcome` / `reason` on Compactions, never a tenant or
// session id (each distinct dimension value set is a billed custom metric).
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

type Unit = (typeof MetricUnit)[keyof typeof MetricUnit];

export const METRIC_NAMESPACE = 'SessionLineage';

export const CompactionMetric = {
  /** Count per attempt, dimensions outcome + reason. */
  Compactions: 'Compactions',
  /** 1 when the attempt lost the lease race (skipped: locked). */
  LeaseContention: 'LeaseContention',
  /** 0 or 1 per attempt that asked for the lease: Sum is the count, Average the rate. */
  LeaseUnavailable: 'LeaseUnavailable',
  /** Milliseconds spent committing (rotation or in-place transaction). */
  CommitLatency: 'CommitLatency',
} as const;

export type CompactionOutcomeKind = 'compressed' | 'skipped' | 'noop' | 'cancelled' | 'disabled';

/** The part of a compaction outcome the metrics need (structural, so any outcome type fits). */
export interface CompactionOutcomeLike {
  outcome: CompactionOutcomeKind;
  reason?: string | undefined;
}

export interface RecordCompactionOptions {
  /** Commit duration, when the attempt reached a commit. */
  latencyMs?: number | undefined;
}

const OUTCOMES: ReadonlySet<string> = new Set<CompactionOutcomeKind>(['compressed', 'skipped', 'noop', 'cancelled', 'disabled']);
const REASON = /^[a-z][a-z0-9_]{0,39}$/;

/** Reasons are a closed set in code; anything else collapses to `other` so a bug cannot explode cardinality. */
export function reasonDimension(reason: string | undefined): string {
  if (reason === undefined || reason === '') return 'none';
  return REASON.test(reason) ? reason : 'other';
}

/** The service's Metrics instance, named from the parsed config (POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_SERVICE_NAME). */
export function createServiceMetrics(names: { metricsNamespace: string; serviceName: string }): Metrics {
  return new Metrics({ namespace: names.metricsNamespace || METRIC_NAMESPACE, serviceName: names.serviceName });
}

function emit(metrics: Metrics, name: string, unit: Unit, value: number, dimensions: Record<string, string> = {}): void {
  const single = metrics.singleMetric();
  for (const [k, v] of Object.entries(dimensions)) single.addDimension(k, v);
  single.addMetric(name, unit, value);
}

/** Records one finished compaction attempt. */
export function recordCompaction(metrics: Metrics, result: CompactionOutcomeLike, opts: RecordCompactionOptions = {}): void {
  const outcome = OUTCOMES.has(result.outcome) ? result.outcome : 'other';
  const reason = reasonDimension(result.reason);
  emit(metrics, CompactionMetric.Compactions, MetricUnit.Count, 1, { outcome, reason });
  // `disabled` attempts never ask for the lease, so they are not part of the unavailable rate.
  if (outcome !== 'disabled') {
    const unavailable = outcome === 'skipped' && reason === 'lease_unavailable';
    emit(metrics, CompactionMetric.LeaseUnavailable, MetricUnit.Count, unavailable ? 1 : 0);
  }
  if (outcome === 'skipped' && reason === 'locked') emit(metrics, CompactionMetric.LeaseContention, MetricUnit.Count, 1);
  const latency = opts.latencyMs;
  if (latency !== undefined && Number.isFinite(latency) && latency >= 0) {
    emit(metrics, CompactionMetric.CommitLatency, MetricUnit.Milliseconds, latency);
  }
}
