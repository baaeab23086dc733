// lib/runtime.ts, the composition root, against the global-setup Redis nodes and DynamoDB Local
// (a table of its own, so the sweep never touches another test's sessions): lazily built, once
// per container, a failed build retried, secrets read only by the functions that use them, and
// the exported handlers of functions/ answering through it.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureTable } from '../../../infra/table.js';
import { sqsShapedEvent } from '../../../lib/after-turn/local-invoke.js';
import { LocalLambdaAfterTurnPublisher, NoopAfterTurnPublisher } from '../../../lib/after-turn/publisher.js';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { createDynamoClient } from '../../../lib/aws-clients.js';
import { ConfigError } from '../../../lib/config.js';
import { afterTurnDeps, afterTurnPublisher, compaction, httpDeps, Runtime, sweepDeps, type RuntimeOptions } from '../../../lib/runtime.js';
import { readCompactionEvents } from '../../../lib/events/index.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import { jsonLinesWritten } from '../../support/json-output.js';

const tableName = `runtime-${randomUUID().slice(0, 8)}`;
const direct = createDynamoClient({ endpoint: process.env.DYNAMODB_ENDPOINT });
const stackEnv = () => ({ REDIS_URLS: process.env.REDIS_URLS!, DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT!, TABLE_NAME: tableName });
const tenantId = 'runtime-test';
let apiKey: string;

beforeAll(async () => {
  await ensureTable(direct, tableName);
  apiKey = (await new ApiKeyStore({ client: direct, tableName }).create(tenantId)).key;
});
afterAll(() => direct.destroy());

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});
function runtimeOf(opts: RuntimeOptions): Runtime {
  const rt = new Runtime(opts);
  runtimes.push(rt);
  return rt;
}

const context = { awsRequestId: 'req-1', functionName: 'slc-test', getRemainingTimeInMillis: () => 60_000 } as unknown as Context;

function request(method: 'GET' | 'POST', path: string, body?: unknown) {
  return {
    version: '2.0',
    rawPath: path,
    headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    requestContext: { http: { method, path } },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    isBase64Encoded: false,
  };
}

describe('composition root (lib/runtime.ts)', () => {
  it('builds nothing until asked; a failed build is not kept, so the next call builds', async () => {
    const env: NodeJS.ProcessEnv = { ...stackEnv(), LEASE_TTL_MS: 'soon' };
    const rt = runtimeOf({ env });
    await expect(httpDeps(rt)).rejects.toThrow(ConfigError);
    await expect(httpDeps(rt)).rejects.toThrow(/LEASE_TTL_MS must be a positive integer/);
    env.LEASE_TTL_MS = '10000';
    await expect(httpDeps(rt)).resolves.toMatchObject({ maxBodyBytes: 5_242_880 });
  });

  it('each function’s deps are built once per container and share one core (one client pool, one lease)', async () => {
    const rt = runtimeOf({ env: stackEnv() });
    const [a, b] = await Promise.all([httpDeps(rt), httpDeps(rt)]);
    expect(a).toBe(b);
    expect(await httpDeps(rt)).toBe(a);
    const core = await rt.core();
    expect(a.store).toBe(core.store);
    expect((await sweepDeps(rt)).store).toBe(core.store);
    expect(await afterTurnDeps(rt)).toBe(await afterTurnDeps(rt));
  });

  it('secrets are read at init, only by the functions that use them: the sweep never reads the OpenAI key', async () => {
    const reads: string[] = [];
    let failNext = true;
    const secrets = async (name: string) => {
      reads.push(name);
      if (name === '/slc/redis' && failNext) {
        failNext = false;
        throw new Error('SSM is briefly unavailable');
      }
      return name === '/slc/redis' ? process.env.REDIS_URLS! : 'sk-from-ssm';
    };
    const env = {
      ...stackEnv(),
      REDIS_URLS: 'redis://127.0.0.1:1',
      REDIS_URLS_SSM_PARAM: '/slc/redis',
      OPENAI_BASE_URL: 'http://127.0.0.1:1/v1',
      OPENAI_MODEL: 'm',
      OPENAI_API_KEY_SSM_PARAM: '/slc/openai',
    };
    const rt = runtimeOf({ env, secrets });
    await expect(sweepDeps(rt)).rejects.toThrow(
      /Cannot read SSM parameter "\/slc\/redis" \(REDIS_URLS_SSM_PARAM\): Error: SSM is briefly unavailable/,
    );
    const sweep = await sweepDeps(rt);
    // The Redis URLs came from SSM, not from the dead REDIS_URLS.
    expect(await sweep.leaseHeld!({ tenantId, sessionId: randomUUID() })).toBe(false);
    expect(reads).toEqual(['/slc/redis', '/slc/redis']);
    await httpDeps(rt);
    await afterTurnDeps(rt);
    expect(reads).toEqual(['/slc/redis', '/slc/redis', '/slc/openai']);
  });

  it('the publisher comes from the parsed config: the local invoke endpoint, else a no-op', async () => {
    const local = runtimeOf({
      env: { ...stackEnv(), LOCAL_LAMBDA_ENDPOINT: 'http://127.0.0.1:3002', AWS_LAMBDA_FUNCTION_NAME: 'slc-local-http' },
    });
    expect(await afterTurnPublisher(local)).toBeInstanceOf(LocalLambdaAfterTurnPublisher);
    expect(await afterTurnPublisher(runtimeOf({ env: stackEnv() }))).toBeInstanceOf(NoopAfterTurnPublisher);
  });

  it('issue 14: every compaction is counted in EMF metrics; a commit publishes SessionCompacted with its correlation id', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slc-events-'));
    const file = join(dir, 'events.jsonl');
    const rt = runtimeOf({ env: { ...stackEnv(), LOCAL_EVENTS_FILE: file, POWERTOOLS_SERVICE_NAME: 'slc-metrics-test' } });
    const { store } = await rt.core();
    const created = await store.createSession({ tenantId });
    if (created.replayed) throw new Error('unexpected replay');
    const ref = { tenantId, sessionId: created.session.sessionId };
    await store.appendItems(ref, {
      prepare: asIs(Array.from({ length: 12 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i} `.repeat(30) }))),
    });
    const compact = await compaction(rt);
    const { value, lines } = await jsonLinesWritten(() =>
      compact({ ref, mode: 'rotate', origin: 'manual', holder: 'metrics', correlationId: 'req-42' }),
    );
    expect(value.outcome).toBe('compressed');
    const emf = lines.filter((l) => '_aws' in l);
    expect(emf).toContainEqual(
      expect.objectContaining({ Compactions: 1, outcome: 'compressed', reason: 'none', service: 'slc-metrics-test' }),
    );
    expect(emf).toContainEqual(expect.objectContaining({ LeaseUnavailable: 0 }));
    expect(emf.some((l) => typeof l.CommitLatency === 'number')).toBe(true);
    const events = await readCompactionEvents(file);
    expect(events).toEqual([
      expect.objectContaining({
        tenantId,
        parentSessionId: ref.sessionId,
        childSessionId: value.sessionId,
        sessionId: value.sessionId,
        mode: 'rotate',
        correlationId: 'req-42',
      }),
    ]);
    // A loser is counted too (contention), and publishes nothing.
    const { lines: again } = await jsonLinesWritten(() => compact({ ref, mode: 'rotate', origin: 'manual', holder: 'metrics-2' }));
    expect(again.filter((l) => '_aws' in l)).toContainEqual(
      expect.objectContaining({ Compactions: 1, outcome: 'skipped', reason: 'adopted' }),
    );
    expect(await readCompactionEvents(file)).toHaveLength(1);
    rmSync(dir, { recursive: true, force: true });
  });

  it('one service name, from POWERTOOLS_SERVICE_NAME, on what the runtime logs', async () => {
    const rt = runtimeOf({ env: { ...stackEnv(), POWERTOOLS_SERVICE_NAME: 'slc-test-service' } });
    const { lines } = await jsonLinesWritten(async () => rt.logger.info('hello'));
    expect(lines).toEqual([expect.objectContaining({ message: 'hello', service: 'slc-test-service' })]);
  });
});

describe('the exported handlers answer through the container runtime', () => {
  // The module-level runtime reads process.env when it first builds, i.e. at the first invocation.
  beforeAll(() => {
    process.env.TABLE_NAME = tableName;
  });
  afterAll(async () => {
    const { runtime } = await import('../../../lib/runtime.js');
    await runtime.close();
  });

  it('http, afterTurn and sweep: one authenticated request, one SQS record, one sweep run', async () => {
    const http = (await import('../../../functions/http.js')).handler;
    const afterTurn = (await import('../../../functions/after-turn.js')).handler;
    const sweep = (await import('../../../functions/sweep.js')).handler;

    const created = await http(request('POST', '/sessions', { source: 'runtime-test' }) as never, context);
    expect(created.statusCode).toBe(201);
    const sessionId = (JSON.parse(created.body!) as { session: { sessionId: string } }).session.sessionId;
    const read = await http(request('GET', `/sessions/${sessionId}`) as never, context);
    expect(read.statusCode).toBe(200);

    const event = sqsShapedEvent([{ messageId: randomUUID(), body: JSON.stringify({ tenantId, sessionId, origin: 'turn' }) }]);
    expect(await afterTurn(event, context)).toEqual({ batchItemFailures: [] });

    const { value, lines } = await jsonLinesWritten(async () => await sweep({}, context));
    expect(value).toMatchObject({ forksFound: 0, cleanupFailures: 0 });
    expect(lines.find((l) => l.message === 'sweep finished')).toMatchObject({ service: 'session-lineage' });
  });
});
