// lib/config.ts: every variable mapped once to a camelCase field, blank means unset, and a bad
// value is an error that names the variable (without echoing values, which may be credentials).
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, telemetryConfig } from '../../../lib/config.js';

describe('loadConfig', () => {
  it('defaults point at the local stack; nothing optional is set', () => {
    expect(loadConfig({})).toEqual({
      serviceName: 'session-lineage',
      metricsNamespace: 'SessionLineage',
      region: 'us-east-1',
      tableName: 'session-lineage',
      attemptShards: 128,
      rotationShards: 32,
      dynamo: { endpoint: undefined, maxAttempts: 3, connectTimeoutMs: 1_000, requestTimeoutMs: 5_000 },
      redis: { kind: 'urls', urls: ['redis://127.0.0.1:6379'] },
      leaseTtlMs: 30_000,
      compactionTokenThreshold: 8_000,
      compactionAttemptBudget: { maxBytes: 4_194_304, maxTokens: 1_000_000 },
      afterTurnCompactionMode: 'rotate',
      afterTurnIdempotencyTtlSeconds: 86_400,
      afterTurnQueueUrl: undefined,
      localLambdaEndpoint: undefined,
      afterTurnFunctionName: undefined,
      lambdaFunctionName: undefined,
      maxBodyBytes: 5_242_880,
      idempotencyTtlSeconds: 86_400,
      archiveRetentionSeconds: 604_800,
      apiKeyCacheTtlSeconds: 60,
      tenantLimits: { requestsPerSecond: 50, compressionsPerMinute: 60, bodyBytesPerSecond: 2_097_152 },
      backgroundWriteUnitsPerSecond: 300,
      eventBusName: undefined,
      localEventsFile: undefined,
      redisTlsCa: undefined,
      engine: { kind: 'extractive' },
      openAiApiKeySsmParam: undefined,
    });
  });

  it('maps each variable to its field', () => {
    const c = loadConfig({
      POWERTOOLS_SERVICE_NAME: 'svc',
      POWERTOOLS_METRICS_NAMESPACE: 'Ns',
      AWS_REGION: 'eu-west-1',
      TABLE_NAME: 't',
      ATTEMPT_SHARDS: '256',
      ROTATION_SHARDS: '64',
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000',
      DYNAMODB_MAX_ATTEMPTS: '4',
      DYNAMODB_CONNECT_TIMEOUT_MS: '500',
      DYNAMODB_REQUEST_TIMEOUT_MS: '2500',
      REDIS_URLS: 'redis://a:1, rediss://b:2',
      LEASE_TTL_MS: '10000',
      COMPACTION_TOKEN_THRESHOLD: '123',
      AFTER_TURN_COMPACTION_MODE: 'in_place',
      AFTER_TURN_IDEMPOTENCY_TTL_SECONDS: '60',
      AFTER_TURN_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/1/q',
      LOCAL_LAMBDA_ENDPOINT: 'http://127.0.0.1:3002',
      AFTER_TURN_FUNCTION_NAME: 'svc-dev-afterTurn',
      AWS_LAMBDA_FUNCTION_NAME: 'svc-dev-http',
      MAX_BODY_BYTES: '2048',
      IDEMPOTENCY_TTL_SECONDS: '3600',
      ARCHIVE_RETENTION_SECONDS: '7200',
      API_KEY_CACHE_TTL_SECONDS: '0',
      RATE_LIMIT_REQUESTS_PER_SECOND: '20',
      RATE_LIMIT_COMPRESSIONS_PER_MINUTE: '0',
      RATE_LIMIT_BODY_BYTES_PER_SECOND: '1000000',
      BACKGROUND_WRITE_UNITS_PER_SECOND: '100',
      EVENT_BUS_NAME: 'bus',
      LOCAL_EVENTS_FILE: '/tmp/events.jsonl',
      REDIS_TLS_CA: '-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----',
      OPENAI_BASE_URL: 'http://127.0.0.1:1/v1',
      OPENAI_MODEL: 'm',
      OPENAI_API_KEY: 'sk-x',
    });
    expect(c).toEqual({
      serviceName: 'svc',
      metricsNamespace: 'Ns',
      region: 'eu-west-1',
      tableName: 't',
      attemptShards: 256,
      rotationShards: 64,
      dynamo: { endpoint: 'http://127.0.0.1:8000', maxAttempts: 4, connectTimeoutMs: 500, requestTimeoutMs: 2500 },
      redis: { kind: 'urls', urls: ['redis://a:1', 'rediss://b:2'] },
      leaseTtlMs: 10_000,
      compactionTokenThreshold: 123,
      compactionAttemptBudget: { maxBytes: 4_194_304, maxTokens: 1_000_000 },
      afterTurnCompactionMode: 'in_place',
      afterTurnIdempotencyTtlSeconds: 60,
      afterTurnQueueUrl: 'https://sqs.us-east-1.amazonaws.com/1/q',
      localLambdaEndpoint: 'http://127.0.0.1:3002',
      afterTurnFunctionName: 'svc-dev-afterTurn',
      lambdaFunctionName: 'svc-dev-http',
      maxBodyBytes: 2048,
      idempotencyTtlSeconds: 3600,
      archiveRetentionSeconds: 7200,
      apiKeyCacheTtlSeconds: 0,
      tenantLimits: { requestsPerSecond: 20, compressionsPerMinute: 0, bodyBytesPerSecond: 1_000_000 },
      backgroundWriteUnitsPerSecond: 100,
      eventBusName: 'bus',
      localEventsFile: '/tmp/events.jsonl',
      redisTlsCa: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----',
      engine: { kind: 'openai', baseUrl: 'http://127.0.0.1:1/v1', model: 'm', apiKey: 'sk-x' },
      openAiApiKeySsmParam: undefined,
    });
  });

  it('blank means unset for every variable (serverless renders absent ones as "")', () => {
    const blank = Object.fromEntries(
      [
        'TABLE_NAME',
        'DYNAMODB_ENDPOINT',
        'LEASE_TTL_MS',
        'AFTER_TURN_COMPACTION_MODE',
        'AFTER_TURN_QUEUE_URL',
        'REDIS_URLS',
        'REDIS_URLS_SSM_PARAM',
        'OPENAI_BASE_URL',
        'OPENAI_MODEL',
        'OPENAI_API_KEY',
        'OPENAI_API_KEY_SSM_PARAM',
        'POWERTOOLS_SERVICE_NAME',
      ].map((name, i) => [name, i % 2 ? '' : '   ']),
    );
    expect(loadConfig(blank)).toEqual(loadConfig({}));
  });

  it('the Redis SSM parameter wins over REDIS_URLS, which is then not even validated', () => {
    expect(loadConfig({ REDIS_URLS_SSM_PARAM: '/slc/dev/redis-urls', REDIS_URLS: 'not a url' }).redis).toEqual({
      kind: 'ssm',
      parameterName: '/slc/dev/redis-urls',
    });
  });

  it('a bad value is a ConfigError naming each bad variable, all at once', () => {
    const err = (() => {
      try {
        loadConfig({
          LEASE_TTL_MS: 'abc',
          AFTER_TURN_COMPACTION_MODE: 'sideways',
          DYNAMODB_ENDPOINT: 'localhost:8000',
          MAX_BODY_BYTES: '1.5',
        });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    expect(message).toMatch(/LEASE_TTL_MS must be a positive integer/);
    expect(message).toMatch(/AFTER_TURN_COMPACTION_MODE must be rotate or in_place/);
    expect(message).toMatch(/DYNAMODB_ENDPOINT must be a URL/);
    expect(message).toMatch(/MAX_BODY_BYTES must be a positive integer/);
  });

  it.each([
    ['DYNAMODB_MAX_ATTEMPTS', '0', /DYNAMODB_MAX_ATTEMPTS must be a positive integer/],
    ['DYNAMODB_REQUEST_TIMEOUT_MS', '-5', /DYNAMODB_REQUEST_TIMEOUT_MS must be a positive integer/],
    ['ATTEMPT_SHARDS', '0', /ATTEMPT_SHARDS must be a positive integer/],
    ['ROTATION_SHARDS', '2.5', /ROTATION_SHARDS must be a positive integer/],
    ['API_KEY_CACHE_TTL_SECONDS', '-1', /API_KEY_CACHE_TTL_SECONDS must be a whole number of seconds/],
    ['RATE_LIMIT_REQUESTS_PER_SECOND', '2.5', /RATE_LIMIT_REQUESTS_PER_SECOND must be a whole number/],
    ['AFTER_TURN_QUEUE_URL', 'my-queue', /AFTER_TURN_QUEUE_URL must be a URL/],
    ['REDIS_URLS', 'http://127.0.0.1:6379', /REDIS_URLS must be comma-separated redis:\/\/ or rediss:\/\/ URLs/],
  ])('%s=%s is refused, naming the variable', (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(message);
  });

  it('errors do not echo values (REDIS_URLS may carry a password)', () => {
    expect(() => loadConfig({ REDIS_URLS: 'http://:hunter2@redis:6379' })).toThrow(/^(?!.*hunter2).*REDIS_URLS/);
  });

  it('half a summarizer config names what is missing, OPENAI_API_KEY_SSM_PARAM included', () => {
    expect(() => loadConfig({ OPENAI_API_KEY_SSM_PARAM: '/slc/openai' })).toThrow(/OPENAI_BASE_URL is missing.*OPENAI_MODEL is missing/);
    expect(loadConfig({ OPENAI_BASE_URL: 'http://x/v1', OPENAI_MODEL: 'm', OPENAI_API_KEY_SSM_PARAM: '/slc/openai' })).toMatchObject({
      engine: { kind: 'openai', baseUrl: 'http://x/v1', model: 'm' },
      openAiApiKeySsmParam: '/slc/openai',
    });
  });

  it('telemetryConfig reads only the service name and metrics namespace, with the same defaults', () => {
    expect(telemetryConfig({ LEASE_TTL_MS: 'abc' })).toEqual({ serviceName: 'session-lineage', metricsNamespace: 'SessionLineage' });
    expect(telemetryConfig({ POWERTOOLS_SERVICE_NAME: ' svc ' })).toMatchObject({ serviceName: 'svc' });
  });
});
