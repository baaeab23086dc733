// Scheduled sweep (SPEC S1-S3): a thin middy adapter over lib/sweep that reports the
// counts as one log line and as EMF metrics.
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { runtime, sweepDeps, type HandlerTelemetry } from '../lib/runtime.js';
import { runSweep, type SweepDeps, type SweepResult } from '../lib/sweep/run-sweep.js';

export interface SweepTelemetry extends HandlerTelemetry {
  metrics: Metrics;
}

const defaultTelemetry = (): SweepTelemetry => ({
  logger: runtime.logger,
  metrics: new Metrics({ serviceName: runtime.serviceName, namespace: runtime.metricsNamespace }),
});

export function createSweepHandler(getDeps: () => Promise<SweepDeps>, { logger, metrics }: SweepTelemetry = defaultTelemetry()) {
  return middy<unknown, SweepResult, Error, Context>()
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics))
    .handler(async () => {
      const r = await runSweep(await getDeps());
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

export const handler = createSweepHandler(() => sweepDeps(runtime));
