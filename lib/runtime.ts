// The composition root: everything a handler needs, built from loadConfig() lazily, once per
// Lambda container, and reused across invocations (warm starts skip the Redis handshakes).
// A build that fails is forgotten, so the next invocation tries again.
//
// What each function needs is a top-level function of a Runtime (httpDeps, afterTurnDeps,
// sweepDeps, afterTurnPublisher), not a method: esbuild drops the ones a bundle does not call,
// and with them the modules only they import (the sweep bundle holds no API or compaction code).
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';
import type { Redis } from 'ioredis';
import { AfterTurnConsumer } from './after-turn/consumer.js';
import { afterTurnPersistence } from './after-turn/idempotency.js';
import { publisherFromConfig, type AfterTurnPublisher } from './after-turn/publisher.js';
import { CachedApiKeyResolver } from './api/api-key-cache.js';
import { ApiKeyStore } from './api/api-keys.js';
import type { ApiDeps } from './api/http-app.js';
import { createDynamoClient, createRedisClients, createSqsClient, createSsmClient, ssmSecretReader, waitForRedis } from './aws-clients.js';
import { compact, type CompactionFollowUps } from './compaction/compact.js';
import { HeldAttempts } from './compaction/held-attempts.js';
import { compactionEventPublisherFrom } from './events/from-env.js';
import { createServiceMetrics } from './telemetry/compaction-metrics.js';
import type { CompactionOutcome, CompactRequest } from './compaction/types.js';
import { engineFromConfig } from './compressors/index.js';
import { RedisTenantLimiter } from './api/tenant-limits.js';
import { loadConfig, resolveEngine, resolveRedisUrls, telemetryConfig, type Config, type SecretReader } from './config.js';
import { assertRedisVersion, SessionLease } from './lease/session-lease.js';
import { DynamoLineageStore } from './lineage/dynamo/store.js';
import { sessionKey } from './session-ref.js';
import { errorFields } from './errors.js';
import type { SweepDeps } from './sweep/run-sweep.js';

/** What every function shares: config, clients, the store and the lease. */
export interface Core {
  config: Config;
  dynamo: DynamoDBClient;
  redis: Redis[];
  store: DynamoLineageStore;
  lease: SessionLease;
}

/** What a handler's middleware needs when it is created (a Runtime is one). */
export interface HandlerTelemetry {
  logger: PowertoolsLogger;
}

export interface RuntimeOptions {
  env?: NodeJS.ProcessEnv;
  /** Reads SSM SecureStrings; default: Powertools parameters over an SSM client built on first use. */
  secrets?: SecretReader;
}

export class Runtime implements HandlerTelemetry {
  readonly env: NodeJS.ProcessEnv;
  readonly serviceName: string;
  readonly metricsNamespace: string;
  /** Powertools Logger named by POWERTOOLS_SERVICE_NAME: every handler and everything they build log through it. */
  readonly logger: PowertoolsLogger;
  private readonly built = new Map<string, Promise<unknown>>();
  private readonly disposers: (() => void)[] = [];
  private readonly secretReader: SecretReader | undefined;

  constructor(opts: RuntimeOptions = {}) {
    this.env = opts.env ?? process.env;
    ({ serviceName: this.serviceName, metricsNamespace: this.metricsNamespace } = telemetryConfig(this.env));
    this.logger = new PowertoolsLogger({ serviceName: this.serviceName });
    this.secretReader = opts.secrets;
  }

  /** `build()` once per runtime under `key`; a rejected build is not kept, so the next call retries. */
  once<T>(key: string, build: () => Promise<T>): Promise<T> {
    let pending = this.built.get(key) as Promise<T> | undefined;
    if (!pending) {
      pending = build();
      this.built.set(key, pending);
      pending.catch(() => {
        if (this.built.get(key) === pending) this.built.delete(key);
      });
    }
    return pending;
  }

  /** Registers cleanup of a client this runtime created, run by close(). */
  onClose(dispose: () => void): void {
    this.disposers.push(dispose);
  }

  config(): Promise<Config> {
    return this.once('config', () => Promise.resolve().then(() => loadConfig(this.env)));
  }

  /** The SSM reader, and its client, exist only once a *_SSM_PARAM variable asks for a secret. */
  secrets(): SecretReader {
    return (name) =>
      this.once('ssm', async () => {
        const config = await this.config();
        if (this.secretReader) return this.secretReader;
        const ssm = createSsmClient({ region: config.region });
        this.onClose(() => ssm.destroy());
        return ssmSecretReader(ssm);
      }).then((read) => read(name));
  }

  core(): Promise<Core> {
    return this.once('core', async () => {
      const config = await this.config();
      // Secrets first: a missing parameter fails the build before any connection is opened.
      const redisUrls = await resolveRedisUrls(config.redis, this.secrets());
      const dynamo = createDynamoClient({ ...config.dynamo, region: config.region });
      const redis = createRedisClients(redisUrls, config.redisTlsCa ? { tlsCa: config.redisTlsCa } : {});
      const dispose = () => {
        redis.forEach((r) => r.disconnect());
        dynamo.destroy();
      };
      let store: DynamoLineageStore;
      let lease: SessionLease;
      try {
        // Commands fail fast on a disconnected client (enableOfflineQueue: false): connect first.
        await waitForRedis(redis);
        // Acquire is one SET ... NX PX ... GET round (P2): refuse to start on a node too old for it.
        await assertRedisVersion(redis);
        store = new DynamoLineageStore({
          client: dynamo,
          tableName: config.tableName,
          attemptShards: config.attemptShards,
          rotationShards: config.rotationShards,
          idempotencyTtlSeconds: config.idempotencyTtlSeconds,
          archiveRetentionSeconds: config.archiveRetentionSeconds,
          backgroundWriteUnitsPerSecond: config.backgroundWriteUnitsPerSecond,
          logger: this.logger,
        });
        lease = new SessionLease({ clients: redis });
      } catch (err) {
        dispose(); // a failed build leaves no reconnecting clients behind
        throw err;
      }
      this.onClose(dispose);
      return { config, dynamo, redis, store, lease };
    });
  }

  /** Disconnects every client and forgets everything built (tests; Lambda never calls it). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.built.values()]);
    this.built.clear();
    for (const dispose of this.disposers.splice(0)) dispose();
  }
}

/** What follows every compaction, whichever engine ran it (E6): the EMF metrics and the SessionCompacted events. */
export function compactionFollowUps(rt: Runtime): Promise<Required<CompactionFollowUps>> {
  return rt.once('followUps', async () => {
    const config = await rt.config();
    return { metrics: createServiceMetrics(config), events: compactionEventPublisherFrom(config, rt.logger) };
  });
}

/** One compaction attempt with the runtime's lease, store, engine, metrics and events (compaction/compact.ts); http and afterTurn. */
export function compaction(rt: Runtime): Promise<(req: CompactRequest) => Promise<CompactionOutcome>> {
  return rt.once('compaction', async () => {
    const [{ config, lease, store }, followUps] = await Promise.all([rt.core(), compactionFollowUps(rt)]);
    const deps = {
      lease,
      store,
      engine: engineFromConfig(await resolveEngine(config, rt.secrets())),
      leaseTtlMs: config.leaseTtlMs,
      attemptBudget: config.compactionAttemptBudget,
      logger: rt.logger,
      ...followUps,
    };
    return (req: CompactRequest) => compact(deps, req);
  });
}

export function afterTurnPublisher(rt: Runtime): Promise<AfterTurnPublisher> {
  return rt.once('publisher', async () => {
    const config = await rt.config();
    return publisherFromConfig(config, rt.logger, () => {
      const sqs = createSqsClient({ region: config.region });
      rt.onClose(() => sqs.destroy());
      return sqs;
    });
  });
}

/** Everything the HTTP API needs (functions/http.ts). */
export function httpDeps(rt: Runtime): Promise<ApiDeps> {
  return rt.once('http', async () => {
    const [{ config, dynamo, store, redis, lease }, compact, publisher, followUps] = await Promise.all([
      rt.core(),
      compaction(rt),
      afterTurnPublisher(rt),
      compactionFollowUps(rt),
    ]);
    return {
      store,
      held: new HeldAttempts({
        lease,
        store,
        logger: rt.logger,
        leaseTtlMs: config.leaseTtlMs,
        attemptBudget: config.compactionAttemptBudget,
        ...followUps,
      }),
      // P2: a warm container answers most requests without an API-key read (revocation delay: the TTL).
      apiKeys: new CachedApiKeyResolver(new ApiKeyStore({ client: dynamo, tableName: config.tableName }), {
        ttlMs: config.apiKeyCacheTtlSeconds * 1000,
      }),
      compact,
      publisher,
      logger: rt.logger,
      maxBodyBytes: config.maxBodyBytes,
      limits: new RedisTenantLimiter(redis, { ...config.tenantLimits, maxBodyBytes: config.maxBodyBytes }, rt.logger),
      publishAboveTokens: config.compactionTokenThreshold,
    };
  });
}

export interface AfterTurnHandlerDeps {
  consumer: Pick<AfterTurnConsumer, 'processBatch'>;
}

/** The SQS after-turn consumer (functions/after-turn.ts). Idempotency records share the store's client. */
export function afterTurnDeps(rt: Runtime): Promise<AfterTurnHandlerDeps> {
  return rt.once('afterTurn', async () => {
    const [{ config, dynamo, store }, compact, { metrics }] = await Promise.all([rt.core(), compaction(rt), compactionFollowUps(rt)]);
    const consumer = new AfterTurnConsumer({
      store,
      compact,
      metrics,
      thresholdTokens: config.compactionTokenThreshold,
      mode: config.afterTurnCompactionMode,
      persistence: afterTurnPersistence(dynamo, config.tableName),
      idempotencyTtlSeconds: config.afterTurnIdempotencyTtlSeconds,
      logger: rt.logger,
    });
    return { consumer };
  });
}

/** The scheduled sweep (functions/sweep.ts): the store, plus the lease backend's second opinion. */
export function sweepDeps(rt: Runtime): Promise<SweepDeps> {
  return rt.once('sweep', async () => {
    const { store, lease } = await rt.core();
    return {
      store,
      leaseHeld: async (ref) => (await lease.holderOf(sessionKey(ref))) !== null,
      onCleanupError: (err, what) =>
        rt.logger.warn('sweep could not clean up', {
          ...what.ref,
          ...('attempt' in what ? { attemptId: what.attempt.attemptId } : { task: what.kind, generation: what.generation }),
          error: errorFields(err),
        }),
    };
  });
}

/** This container's runtime: the functions' exported handlers use it. */
export const runtime = new Runtime();
