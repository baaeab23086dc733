// SPEC P6 item 2 (issue 35): a compress never answers a deadline 503 because reading or
// summarizing ran out of time. The whole HTTP path, in process, with a short function timeout set
// for the test: the attempt's snapshot read stalls in DynamoDB, and the compress answers 200
// `cancelled` at the commit margin (C9), its lease released, instead of the route racing into the
// invocation's end (503 outcome_unknown).
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { DEFAULT_COMMIT_SAFETY_MARGIN_MS } from '../../../lib/compaction/compact-session.js';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import { httpDeps } from '../../../lib/runtime.js';
import { sessionKey } from '../../../lib/session-ref.js';
import { gatewayEvent, testStackRuntime } from '../../support/in-process-api.js';

const rt = testStackRuntime();
const tenantId = `cd-${randomUUID().slice(0, 8)}`;
let key: string;
let stalled: (command: string) => boolean = () => false;
const waiting: (() => void)[] = [];

beforeAll(async () => {
  const { dynamo } = await rt.core();
  key = (await new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! }).create(tenantId)).key;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      if (stalled(context.commandName ?? '')) await new Promise<void>((r) => waiting.push(r));
      return next(args);
    },
    { step: 'initialize', name: 'compressDeadlineStall' },
  );
});
afterAll(async () => {
  waiting.splice(0).forEach((r) => r());
  await rt.close();
});

const request = (method: string, path: string, body?: unknown): APIGatewayProxyEventV2 => gatewayEvent(key, method, path, body);

describe('compress within the invocation (P6)', () => {
  it('P6/C9: a snapshot read still stalled at the commit margin of a short function timeout → 200 cancelled, nothing written, lease free', async () => {
    const deps = await httpDeps(rt);
    const created = await handleHttpRequest(request('POST', '/sessions', {}), deps, { requestId: 'create' });
    const sessionId = (JSON.parse(created.body!) as { session: { sessionId: string } }).session.sessionId;
    const messages = Array.from({ length: 40 }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `turn ${i} ${'x'.repeat(200)}`,
    }));
    await handleHttpRequest(request('POST', `/sessions/${sessionId}/messages`, { messages }), deps, { requestId: 'append' });
    // The function's timeout for this test: the commit margin plus 1.5 s.
    const end = Date.now() + DEFAULT_COMMIT_SAFETY_MARGIN_MS + 1_500;
    stalled = (c) => c === 'QueryCommand';
    let res;
    try {
      res = await handleHttpRequest(request('POST', `/sessions/${sessionId}/compress`, { mode: 'in_place' }), deps, {
        requestId: randomUUID(),
        remainingTimeMs: () => end - Date.now(),
      });
    } finally {
      stalled = () => false;
      waiting.splice(0).forEach((r) => r());
    }
    expect(res.statusCode).toBe(200);
    const body = JSON.parse(res.body!) as { outcome: string; warnings: string[] };
    expect(body.outcome).toBe('cancelled');
    expect(body.warnings.join(' ')).toMatch(/safety margin/);
    const { store, lease } = await rt.core();
    const session = await store.getSession({ tenantId, sessionId });
    expect(session).toMatchObject({ messageCount: 40, generation: 0 });
    expect(session?.attempt).toBeUndefined();
    expect(await lease.holderOf(sessionKey({ tenantId, sessionId }))).toBeNull();
  }, 30_000);
});
