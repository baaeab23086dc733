// Scheduled sweep (SPEC S1-S3): a thin middy adapter over lib/sweep that reports the
// counts as one log line and as EMF metrics.
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { getRuntime } from '../lib/runtime.js';
import { sessionKey } from '../lib/session-ref.js';
import { runSweep, type SweepDeps, type SweepResult } from '../lib/sweep/run-sweep.js';

const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? 'session-lineage';
const defaultLogger = new Logger({ serviceName });
const defaultMetrics = new Metrics({ serviceName, namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'SessionLineage' });

export interface SweepTelemetry {
  logger: Logger;
  metrics: Metrics;
}

export function createSweepHandler(
  getDeps: (logger: Logger) => Promise<SweepDeps>,
  { logger, metrics }: SweepTelemetry = { logger: defaultLogger, metrics: defaultMetrics },
) {
  return middy<unknown, SweepResult, Error, Context>()
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics))
    .handler(async () => {
      const r = await runSweep(await getDeps(logger));
      metrics.addMetric('ExpiredAttemptsCleaned', MetricUnit.Count, r.expiredAttemptsCleaned);
      metrics.addMetric('OrphansRemoved', MetricUnit.Count, r.orphanMessagesRemoved);
      // Emitted even when zero, so an alarm on ForksFound > 0 has data to look at.
      metrics.addMetric('ForksFound', MetricUnit.Count, r.forksFound);
      const line = { ...r, forks: r.forks.map((f) => ({ ...f.parent, childSessionIds: f.childSessionIds })) };
      if (r.forksFound > 0) logger.error('sweep finished: FORKED LINEAGE FOUND (SPEC I1)', line);
      else logger.info('sweep finished', line);
      return r;
    });
}

async function depsFromRuntime(logger: Logger): Promise<SweepDeps> {
  const runtime = await getRuntime();
  return {
    store: runtime.store,
    leaseHeld: async (ref) => (await runtime.lease.holderOf(sessionKey(ref))) !== null,
    onCleanupError: (err, what) =>
      logger.warn('sweep could not clean up', {
        ...what.ref,
        ...('attempt' in what ? { attemptId: what.attempt.attemptId } : { task: what.kind, generation: what.generation }),
        error: err instanceof Error ? err.message : String(err),
      }),
  };
}

export const handler = createSweepHandler(depsFromRuntime);
