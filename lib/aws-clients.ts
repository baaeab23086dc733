// Client factories shared by handlers, tests, CLI and benchmarks, so every Redis and AWS
// client in the project is configured one way.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import { SSMProvider } from '@aws-lambda-powertools/parameters/ssm';
import { Redis } from 'ioredis';
import { defaultAwsRegion, type SecretReader } from './config.js';

export interface RedisClientOptions {
  /** Per-command connect timeout; small so a dead node is noticed in milliseconds. */
  connectTimeoutMs?: number;
  /** PEM of a private CA to trust for `rediss://` nodes (public CAs, ElastiCache's included, need none). */
  tlsCa?: string;
}

/**
 * One ioredis client per Redlock node. enableOfflineQueue=false makes a command on a
 * disconnected client fail at once instead of queueing; maxRetriesPerRequest=1 bounds
 * retries, so quorum loss surfaces in milliseconds rather than the 40 s reconnect budget.
 */
export function createRedisClient(url: string, opts: RedisClientOptions = {}): Redis {
  const tls = opts.tlsCa && url.startsWith('rediss://') ? { tls: { ca: opts.tlsCa } } : {};
  const client = new Redis(url, {
    ...tls,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: opts.connectTimeoutMs ?? 1000,
    commandTimeout: 2000,
    // Keep reconnecting in the background (a restarted node rejoins the quorum), capped at 1 s.
    retryStrategy: (times) => Math.min(50 * times, 1000),
    lazyConnect: false,
  });
  // Errors surface per command; an unhandled 'error' event would crash the process.
  client.on('error', () => undefined);
  return client;
}

export function createRedisClients(urls: readonly string[], opts: RedisClientOptions = {}): Redis[] {
  return urls.map((u) => createRedisClient(u, opts));
}

/** Resolves once every client is connected or failed; lets callers start in a known state. */
export async function waitForRedis(clients: readonly Redis[], timeoutMs = 2000): Promise<void> {
  await Promise.all(
    clients.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.status === 'ready') return resolve();
          const t = setTimeout(resolve, timeoutMs);
          c.once('ready', () => {
            clearTimeout(t);
            resolve();
          });
        }),
    ),
  );
}

/** Retry and timeouts of every AWS client (lib/config.ts maps DYNAMODB_* onto these for DynamoDB). */
export interface AwsTransportOptions {
  region?: string;
  /** Total tries per call, first included. Default 3. */
  maxAttempts?: number;
  /** TCP connect budget per try. Default 1 s. */
  connectTimeoutMs?: number;
  /** Whole request + response budget per try. Default 5 s. */
  requestTimeoutMs?: number;
}

export const DEFAULT_AWS_TRANSPORT = { maxAttempts: 3, connectTimeoutMs: 1_000, requestTimeoutMs: 5_000 } as const;

/**
 * The SDK's standard retry strategy (bounded attempts, jittered backoff, a retry quota) retries
 * transport errors (ECONNRESET, EPIPE, ETIMEDOUT, our timeouts), 500/502/503/504 and throttling.
 * A resend re-sends the serialized request, so a transaction keeps its ClientRequestToken and
 * DynamoDB applies it once. Without throwOnRequestTimeout the SDK only logs a breached requestTimeout.
 */
function awsClientConfig(opts: AwsTransportOptions) {
  return {
    region: opts.region ?? defaultAwsRegion(),
    retryMode: 'standard',
    maxAttempts: opts.maxAttempts ?? DEFAULT_AWS_TRANSPORT.maxAttempts,
    requestHandler: {
      connectionTimeout: opts.connectTimeoutMs ?? DEFAULT_AWS_TRANSPORT.connectTimeoutMs,
      requestTimeout: opts.requestTimeoutMs ?? DEFAULT_AWS_TRANSPORT.requestTimeoutMs,
      throwOnRequestTimeout: true,
    },
  } as const;
}

export interface DynamoClientOptions extends AwsTransportOptions {
  /** DynamoDB Local; static dummy credentials go with it. */
  endpoint?: string | undefined;
}

export function createDynamoClient(opts: DynamoClientOptions = {}): DynamoDBClient {
  return new DynamoDBClient({
    ...awsClientConfig(opts),
    ...(opts.endpoint ? { endpoint: opts.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
}

export function createSqsClient(opts: AwsTransportOptions = {}): SQSClient {
  return new SQSClient(awsClientConfig(opts));
}

export function createSsmClient(opts: AwsTransportOptions = {}): SSMClient {
  return new SSMClient(awsClientConfig(opts));
}

/** Decrypted SSM SecureStrings through Powertools parameters (cached by the provider, default 5 s). */
export function ssmSecretReader(client: SSMClient): SecretReader {
  const provider = new SSMProvider({ awsSdkV3Client: client });
  return (name) => provider.get(name, { decrypt: true });
}
