// The afterTurn Lambda handler, invoked with real SQS-shaped events, against DynamoDB Local
// and the Redis nodes of the global setup (SPEC F3, C13).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAfterTurnHandler } from '../../../functions/after-turn.js';
import type { AfterTurnConsumer } from '../../../lib/after-turn/consumer.js';
import { sqsShapedEvent } from '../../../lib/after-turn/local-invoke.js';
import { startRedis, type LocalProcess } from '../../../infra/local/processes.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import { RoundTrips } from '../../support/round-trips.js';
import { body, consumerFor, CountingEngine, harness, idempotencyRecord, lambdaContext, seed, transcript, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await harness();
});
afterAll(() => h.close());

function invoke(consumer: AfterTurnConsumer, records: { messageId: string; body: string }[], remainingMs?: number) {
  const handler = createAfterTurnHandler(async () => ({ consumer }));
  return handler(sqsShapedEvent(records), lambdaContext(remainingMs));
}

async function snapshot(ref: SessionRef) {
  return { session: await h.store.getSession(ref), items: await h.store.readAll(ref), children: await h.store.children(ref) };
}

describe('afterTurn handler (SPEC F3)', () => {
  it('F3 P1: a session under the threshold costs one GetItem and writes nothing (no idempotency record)', async () => {
    const engine = new CountingEngine();
    const ref = await seed(h.store, transcript(2, 5));
    const messageId = randomUUID();
    const trips = new RoundTrips().watchDynamo(h.ddb);
    const { result, calls } = await trips.during(() =>
      consumerFor(h, engine).processBatch([{ messageId, body: body(ref) }], lambdaContext()),
    );
    trips.restore();
    expect(result.records[0]).toMatchObject({ ok: true, result: { status: 'below_threshold' } });
    expect(calls.map((c) => c.op)).toEqual(['GetItemCommand']);
    expect(await idempotencyRecord(h.ddb, messageId)).toBeUndefined();
  });

  it('F3: the threshold reads the running token estimate kept by every append', async () => {
    const ref = await seed(h.store, transcript(12));
    const estimate = (await h.store.getSession(ref))!.tokenEstimate;
    expect(estimate).toBeGreaterThan(1000);
    await h.store.appendItems(ref, { prepare: asIs(transcript(1)) });
    expect((await h.store.getSession(ref))!.tokenEstimate).toBeGreaterThan(estimate);
  });

  it('F3: a session over the token threshold is compacted once into exactly one child', async () => {
    const engine = new CountingEngine();
    const ref = await seed(h.store, transcript(12));
    const messageId = randomUUID();
    const res = await invoke(consumerFor(h, engine), [{ messageId, body: body(ref) }]);
    expect(res).toEqual({ batchItemFailures: [] });
    expect(engine.calls).toBe(1);
    const children = await h.store.children(ref);
    expect(children).toHaveLength(1);
    expect((await h.store.getSession(ref))?.childSessionId).toBe(children[0]?.sessionId);
    expect(await idempotencyRecord(h.ddb, messageId)).toMatchObject({ status: 'COMPLETED' });
  });

  it('F3: a session under the threshold is not compacted and not changed', async () => {
    const engine = new CountingEngine();
    const ref = await seed(h.store, transcript(2, 5));
    const before = await snapshot(ref);
    const res = await invoke(consumerFor(h, engine), [{ messageId: randomUUID(), body: body(ref) }]);
    expect(res).toEqual({ batchItemFailures: [] });
    expect(engine.calls).toBe(0);
    expect(await snapshot(ref)).toEqual(before);
  });

  it("C13: a review-origin event is refused by the consumer's rule, before any read or compaction call; nothing is written", async () => {
    const engine = new CountingEngine();
    const ref = await seed(h.store, transcript(12));
    const before = await snapshot(ref);
    const messageId = randomUUID();
    // The layer that refuses is the consumer: compact (where compactSession would refuse too) is never reached.
    const consumer = consumerFor(h, engine, {
      compact: () => Promise.reject(new Error('compact must not be called for a review event')),
    });
    const trips = new RoundTrips().watchDynamo(h.ddb);
    const { calls } = await trips.during(() => consumer.processBatch([{ messageId, body: body(ref, 'review') }], lambdaContext()));
    trips.restore();
    expect(calls).toEqual([]);
    const report = await consumer.processBatch([{ messageId, body: body(ref, 'review') }], lambdaContext());
    expect(report.records).toEqual([{ messageId, ok: true, result: { status: 'disabled', reason: 'review_origin' }, replayed: false }]);
    expect(await invoke(consumer, [{ messageId, body: body(ref, 'review') }])).toEqual({ batchItemFailures: [] });
    expect(engine.calls).toBe(0);
    expect(await snapshot(ref)).toEqual(before);
    expect(await idempotencyRecord(h.ddb, messageId)).toBeUndefined();
  });

  it('F3: the same messageId delivered twice in sequence compacts once, though the session grew past the threshold again', async () => {
    const engine = new CountingEngine();
    const consumer = consumerFor(h, engine, { mode: 'in_place' });
    const ref = await seed(h.store, transcript(12));
    const messageId = randomUUID();
    expect(await invoke(consumer, [{ messageId, body: body(ref) }])).toEqual({ batchItemFailures: [] });
    expect(engine.calls).toBe(1);
    const generation = (await h.store.getSession(ref))?.generation;

    await h.store.appendItems(ref, { prepare: asIs(transcript(12)) });
    expect(await invoke(consumer, [{ messageId, body: body(ref) }])).toEqual({ batchItemFailures: [] });
    expect(engine.calls).toBe(1);
    expect((await h.store.getSession(ref))?.generation).toBe(generation);

    // Control: a new event for the same, still oversized session does compact.
    expect(await invoke(consumer, [{ messageId: randomUUID(), body: body(ref) }])).toEqual({ batchItemFailures: [] });
    expect(engine.calls).toBe(2);
  });

  it('F3: the same messageId delivered twice at once compacts once; a copy turned away is retried and replays', async () => {
    const engine = new CountingEngine();
    const consumer = consumerFor(h, engine, { mode: 'in_place', thresholdTokens: 100 });
    const ref = await seed(h.store, transcript(12));
    const messageId = randomUUID();
    const results = await Promise.all([0, 1].map(() => invoke(consumer, [{ messageId, body: body(ref) }])));
    for (const r of results) expect(r.batchItemFailures.every((f) => f.itemIdentifier === messageId)).toBe(true);
    expect(results.filter((r) => r.batchItemFailures.length === 0).length).toBeGreaterThanOrEqual(1);
    expect(engine.calls).toBe(1);

    // The session is still over this low threshold: only idempotency stops another compaction.
    await h.store.appendItems(ref, { prepare: asIs(transcript(12)) });
    expect(await invoke(consumer, [{ messageId, body: body(ref) }])).toEqual({ batchItemFailures: [] });
    expect(engine.calls).toBe(1);
  });

  it('F3: a batch with one failing record reports exactly that record; the others succeed', async () => {
    const engine = new CountingEngine();
    const big = await seed(h.store, transcript(12));
    const small = await seed(h.store, transcript(2, 5));
    const missing = { tenantId: `t-${randomUUID()}`, sessionId: randomUUID() };
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    const res = await invoke(consumerFor(h, engine), [
      { messageId: ids[0]!, body: body(big) },
      { messageId: ids[1]!, body: body(missing) },
      { messageId: ids[2]!, body: body(small) },
    ]);
    expect(res).toEqual({ batchItemFailures: [{ itemIdentifier: ids[1] }] });
    expect(await h.store.children(big)).toHaveLength(1);
    expect(await h.store.children(small)).toHaveLength(0);
    // A failed record leaves no idempotency record behind: its redelivery runs again.
    expect(await idempotencyRecord(h.ddb, ids[1]!)).toBeUndefined();
  });

  it('F3: malformed bodies are reported failed (they dead-letter after maxReceiveCount) and write nothing', async () => {
    const engine = new CountingEngine();
    const ok = await seed(h.store, transcript(2, 5));
    const bad = [
      'not json',
      JSON.stringify({ tenantId: 't' }),
      JSON.stringify({ tenantId: 't', sessionId: 's', origin: 'bogus' }),
      JSON.stringify({ tenantId: '', sessionId: 's', origin: 'turn' }),
    ].map((b) => ({ messageId: randomUUID(), body: b }));
    const good = { messageId: randomUUID(), body: body(ok) };
    const res = await invoke(consumerFor(h, engine), [...bad, good]);
    expect(res.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(bad.map((b) => b.messageId).sort());
    for (const b of bad) expect(await idempotencyRecord(h.ddb, b.messageId)).toBeUndefined();
    expect(engine.calls).toBe(0);
  });

  it('F3/L4: with the lease backend down the record fails and stays retryable; the retry compacts', async () => {
    const nodes: LocalProcess[] = await Promise.all([startRedis(), startRedis(), startRedis()]);
    const degraded = await harness(nodes.map((n) => n.url));
    try {
      await Promise.all([nodes[0]!.stop(), nodes[1]!.stop()]);
      const engine = new CountingEngine();
      const ref = await seed(h.store, transcript(12));
      const messageId = randomUUID();
      const res = await invoke(consumerFor({ ...degraded, store: h.store }, engine), [{ messageId, body: body(ref) }]);
      expect(res).toEqual({ batchItemFailures: [{ itemIdentifier: messageId }] });
      expect(engine.calls).toBe(0);
      expect(await h.store.children(ref)).toHaveLength(0);

      // Redelivery to a healthy consumer: the failed attempt did not mark the message done.
      expect(await invoke(consumerFor(h, engine), [{ messageId, body: body(ref) }])).toEqual({ batchItemFailures: [] });
      expect(engine.calls).toBe(1);
      expect(await h.store.children(ref)).toHaveLength(1);
    } finally {
      await degraded.close();
      await Promise.all(nodes.map((n) => n.stop()));
    }
  });

  it('F3: an invocation that dies mid-record blocks redelivery only until its in-progress record expires', async () => {
    const ref = await seed(h.store, transcript(12));
    const messageId = randomUUID();
    let started = false;
    // The first invocation never finishes (a crash or timeout): its compaction hangs forever.
    const hung = consumerFor(h, new CountingEngine(), {
      minRemainingMsToStart: 0,
      compact: () => {
        started = true;
        return new Promise(() => undefined);
      },
    });
    const dead = invoke(hung, [{ messageId, body: body(ref) }], 6000);
    await expect.poll(() => started, { timeout: 10_000 }).toBe(true);
    const record = await idempotencyRecord(h.ddb, messageId);
    expect(record).toMatchObject({ status: 'INPROGRESS' });

    const engine = new CountingEngine();
    const healthy = consumerFor(h, engine);
    // While the dead invocation's time has not run out (seconds left), a redelivery is turned away (retryable).
    const expiry = Number(record?.in_progress_expiration);
    expect(await invoke(healthy, [{ messageId, body: body(ref) }])).toEqual({ batchItemFailures: [{ itemIdentifier: messageId }] });
    // middy gives up as the invocation's time runs out, as Lambda would.
    await expect(dead).rejects.toThrow(/abort/i);
    await expect.poll(() => Date.now() > expiry, { timeout: 10_000, interval: 100 }).toBe(true);
    expect(await invoke(healthy, [{ messageId, body: body(ref) }])).toEqual({ batchItemFailures: [] });
    expect(engine.calls).toBe(1);
    expect(await h.store.children(ref)).toHaveLength(1);
  });

  it('F3: records are not started when the invocation is nearly out of time; they are reported for redelivery', async () => {
    const engine = new CountingEngine();
    const ref = await seed(h.store, transcript(12));
    const messageId = randomUUID();
    const res = await invoke(consumerFor(h, engine, { minRemainingMsToStart: 10_000 }), [{ messageId, body: body(ref) }], 5_000);
    expect(res).toEqual({ batchItemFailures: [{ itemIdentifier: messageId }] });
    expect(engine.calls).toBe(0);
    expect(await idempotencyRecord(h.ddb, messageId)).toBeUndefined();
  });
});
