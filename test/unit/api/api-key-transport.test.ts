// The API-key read when DynamoDB stalls (issue 11 item 6, found by test/chaos/storm.test.ts):
// after the SDK's timeouts and retries it is a retryable 503, like every other store call, never
// an opaque 500. The "DynamoDB" here accepts connections and never answers.
import { createServer, type Server, type Socket } from 'node:net';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import { createDynamoClient } from '../../../lib/aws-clients.js';
import { StoreRetryableError } from '../../../lib/lineage/errors.js';
import type { LineageStore } from '../../../lib/lineage/types.js';

let server: Server;
const sockets = new Set<Socket>();
let endpoint: string;

beforeAll(async () => {
  server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const stalledKeys = () =>
  new ApiKeyStore({ client: createDynamoClient({ endpoint, maxAttempts: 2, requestTimeoutMs: 100 }), tableName: 't' });

describe('API keys on a stalled DynamoDB', () => {
  it('F1/issue 11: resolve gives up as StoreRetryableError once the SDK timed out', async () => {
    await expect(stalledKeys().resolve('slk_some-key')).rejects.toBeInstanceOf(StoreRetryableError);
  });

  it('F1/issue 11: a request is answered 503 unavailable with Retry-After, not 500', async () => {
    const logger = { info: vi.fn(), warn: vi.fn(), error: vi.fn() };
    const deps = {
      store: {} as LineageStore,
      apiKeys: stalledKeys(),
      compact: vi.fn(),
      publisher: { publish: vi.fn() },
      logger,
    } as unknown as ApiDeps;
    const event = {
      version: '2.0',
      rawPath: '/sessions/s1',
      headers: { authorization: 'Bearer slk_some-key' },
      requestContext: { http: { method: 'GET', path: '/sessions/s1' } },
    } as unknown as APIGatewayProxyEventV2;
    const res = await handleHttpRequest(event, deps, { requestId: 'r1' });
    expect(res.statusCode).toBe(503);
    expect(JSON.parse(res.body!)).toMatchObject({ error: { code: 'unavailable' } });
    expect(Number(res.headers?.['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(logger.error).not.toHaveBeenCalled();
  });
});
