// The after-turn consumer and the per-conversation compaction policy (SPEC E6, F3): a session whose
// policy is `agent` is never compacted by the service's engine behind the agent's back. The
// consumer's one read says so (no lease, no engine, no idempotency record); a policy set after
// that read is still refused, by the begin's own condition. Both are logged and counted.
import { randomUUID } from 'node:crypto';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDue, compactDue } from '../../../lib/after-turn/handle-after-turn.js';
import { compactSession } from '../../../lib/compaction/compact-session.js';
import { sessionKey } from '../../../lib/session-ref.js';
import { RoundTrips } from '../../support/round-trips.js';
import { jsonLinesWritten } from '../../support/json-output.js';
import { body, consumerFor, CountingEngine, harness, idempotencyRecord, lambdaContext, seed, transcript, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await harness();
});
afterAll(() => h.close());

const emfOf = (lines: Record<string, unknown>[]) => lines.filter((l) => '_aws' in l);

describe('after-turn and the agent compaction policy (SPEC E6)', () => {
  it('E6: the consumer leaves an agent-policy session over the threshold alone: disabled agent_engine, one read, no lease, logged and counted', async () => {
    const engine = new CountingEngine();
    const ref = await seed(h.store, transcript(12));
    await h.store.setCompactionPolicy(ref, 'agent');
    const before = await h.store.getSession(ref);
    const messageId = randomUUID();
    const metrics = new Metrics({ namespace: 'SessionLineage', serviceName: 'slc-e6-test' });
    const consumer = consumerFor(h, engine, { metrics });
    const trips = new RoundTrips().watchDynamo(h.ddb).watchRedis(h.redis);
    const { value, lines } = await jsonLinesWritten(() =>
      trips.during(() => consumer.processBatch([{ messageId, body: body(ref) }], lambdaContext())),
    );
    trips.restore();
    expect(value.result.records[0]).toMatchObject({ ok: true, result: { status: 'disabled', reason: 'agent_engine' } });
    expect(value.calls.map((c) => `${c.kind}:${c.op}`)).toEqual(['dynamodb:GetItemCommand']);
    expect(engine.calls).toBe(0);
    expect(emfOf(lines)).toContainEqual(expect.objectContaining({ Compactions: 1, outcome: 'disabled', reason: 'agent_engine' }));
    expect(await idempotencyRecord(h.ddb, messageId)).toBeUndefined();
    const after = await h.store.getSession(ref);
    expect([after?.fence, after?.messageCount, after?.endedAt]).toEqual([before?.fence, 12, undefined]);
  });

  it('E6: the consumer logs the disabled record with its reason', async () => {
    const ref = await seed(h.store, transcript(12));
    await h.store.setCompactionPolicy(ref, 'agent');
    const logged: { message: string; fields: Record<string, unknown> }[] = [];
    const logger = {
      debug: () => undefined,
      info: (message: string, fields?: Record<string, unknown>) => logged.push({ message, fields: fields ?? {} }),
      warn: () => undefined,
      error: () => undefined,
    };
    await consumerFor(h, new CountingEngine(), { logger }).processBatch([{ messageId: randomUUID(), body: body(ref) }], lambdaContext());
    expect(logged).toContainEqual(
      expect.objectContaining({
        message: 'after-turn record handled',
        fields: expect.objectContaining({ result: { status: 'disabled', reason: 'agent_engine' } }),
      }),
    );
  });

  it("E6: a policy set after the consumer's read is still refused by the begin's condition: disabled agent_engine, nothing written, the lease free", async () => {
    const engine = new CountingEngine();
    const ref = await seed(h.store, transcript(12));
    const deps = {
      store: h.store,
      compact: (req: Parameters<typeof compactSession>[1]) =>
        compactSession({ lease: h.lease, store: h.store, engine, leaseTtlMs: 10_000 }, req),
      thresholdTokens: 1000,
      mode: 'rotate' as const,
    };
    const event = { ...ref, origin: 'turn' as const };
    const due = await checkDue(deps, event);
    if (!due.due) throw new Error('the session should be due');
    await h.store.setCompactionPolicy(ref, 'agent');
    const result = await compactDue(deps, { event, holder: 'e6-race' }, due.session);
    expect(result).toEqual({ status: 'disabled', reason: 'agent_engine' });
    expect(engine.calls).toBe(0);
    expect(await h.store.children(ref)).toEqual([]);
    expect((await h.store.getSession(ref))?.attempt).toBeUndefined();
    expect(await h.lease.holderOf(sessionKey(ref))).toBeNull();
  });
});
