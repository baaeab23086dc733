// SPEC P6 at full size (issue 35 item 7): a session of 50,000 turns of about 1 KB (about 50 MB),
// built in 4 MB appends, compacts to under the threshold through repeated bounded attempts with the
// default bound (COMPACTION_ATTEMPT_MAX_BYTES 4 MiB): in place through the HTTP API with a 29 s
// function timeout (every answer 2xx, the item count falls on every attempt, a tail read right
// after answers 200), by rotation (one child; every item kept or counted in one summary), and a
// held attempt on it. In the slow suite: building 100 MB in DynamoDB Local takes minutes; the
// same properties at 2,000 turns are in test/integration/compaction/bounded-attempts.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleHttpRequest } from '../../functions/adapters/api-gateway.js';
import { ApiKeyStore } from '../../lib/api/api-keys.js';
import { compactSession } from '../../lib/compaction/index.js';
import { HeldAttempts } from '../../lib/compaction/held-attempts.js';
import type { CompactionOutcome } from '../../lib/compaction/types.js';
import { httpDeps } from '../../lib/runtime.js';
import { conserved, countingEngine, longSession } from '../support/bounded-fixtures.js';
import { contendersForSuite, depsOn, type Contender } from '../support/compaction-fixtures.js';
import { gatewayEvent, testStackRuntime } from '../support/in-process-api.js';

const TURNS = 50_000;
const BYTES = 1_000;
/** 4,000 turns of 1 KB: a 4 MB append, under the 5 MB body limit (A7). */
const PER_APPEND = 4_000;
const FUNCTION_TIMEOUT_MS = 29_000;

const [c] = contendersForSuite(1) as [Contender];
const rt = testStackRuntime();
const tenantId = `ls-${randomUUID().slice(0, 8)}`;
let key: string;
beforeAll(async () => {
  const { dynamo } = await rt.core();
  key = (await new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! }).create(tenantId)).key;
});
afterAll(() => rt.close());

describe('a 50,000-turn session (P6)', () => {
  it('P6: held, then in place through the HTTP API: a held begin hands out the oldest bounded part (partial), then every compress answers 2xx within a 29 s timeout, the count falls on every attempt, and a tail read right after answers 200', async () => {
    const ref = await longSession(c.store, TURNS, { perAppend: PER_APPEND, bytes: BYTES, tenantId });
    const original = (await c.store.readTail(ref, 3, 1_000_000)).items;
    const deps = await httpDeps(rt);

    // A held attempt on it: a bounded snapshot of the oldest part, and its commit replaces exactly that.
    const held = new HeldAttempts({ lease: c.lease, store: c.store, leaseTtlMs: 30_000 });
    const begun = await held.begin(ref, { mode: 'in_place', origin: 'manual' });
    expect(begun).toMatchObject({ outcome: 'started', attempt: { partial: true } });
    if (begun.outcome !== 'started') return;
    expect(begun.messages.length).toBeLessThan(TURNS / 5);
    const replacement = (await countingEngine().compress({ format: 'chat', items: begun.messages }, {})).items;
    const committed = await held.commit(ref, begun.attempt.attemptId, begun.attempt.leaseToken, replacement);
    expect(committed).toMatchObject({ outcome: 'compressed', partial: true });
    let count = (await c.store.getSession(ref))!.messageCount;
    expect(count).toBe(TURNS - begun.messages.length + replacement.length);

    for (let attempt = 0; attempt < 60; attempt++) {
      const end = Date.now() + FUNCTION_TIMEOUT_MS;
      const res = await handleHttpRequest(gatewayEvent(key, 'POST', `/sessions/${ref.sessionId}/compress`, { mode: 'in_place' }), deps, {
        requestId: randomUUID(),
        remainingTimeMs: () => end - Date.now(),
      });
      expect(res.statusCode).toBe(200);
      const body = JSON.parse(res.body!) as { outcome: string; partial?: boolean };
      expect(body.outcome).toBe('compressed');
      const tail = await handleHttpRequest(
        gatewayEvent(key, 'GET', `/sessions/${ref.sessionId}/messages`, undefined, { tail: '3' }),
        deps,
        {
          requestId: randomUUID(),
        },
      );
      expect(tail.statusCode).toBe(200);
      const now = (await c.store.getSession(ref))!.messageCount;
      expect(now).toBeLessThan(count);
      count = now;
      if (!body.partial) break;
    }
    expect(count).toBeLessThan(10);
    // The newest turns were never part of a summary until the last, whole attempt; the session still ends with a real turn.
    expect((await c.store.readAll(ref)).length).toBe(count);
    expect(original).toHaveLength(3);
  }, 1_200_000);

  it('C10/P6: by rotation: in place first, one bounded part per attempt, then one child; every turn kept or counted in one summary', async () => {
    const ref = await longSession(c.store, TURNS, { perAppend: PER_APPEND, bytes: BYTES });
    const outcomes: CompactionOutcome[] = [];
    for (let i = 0; i < 60; i++) {
      const out = await compactSession(depsOn(c, { engine: countingEngine() }), {
        ref,
        mode: 'rotate',
        origin: 'manual',
        holder: 'p6-big',
      });
      outcomes.push(out);
      expect(out.outcome).toBe('compressed');
      if (out.outcome !== 'compressed' || !out.partial) break;
    }
    expect(outcomes.length).toBeGreaterThan(5);
    const last = outcomes.at(-1)!;
    expect(last).toMatchObject({ outcome: 'compressed', mode: 'rotate' });
    expect(await c.store.children(ref)).toHaveLength(1);
    expect(conserved(await c.store.readAll({ tenantId: ref.tenantId, sessionId: last.sessionId }))).toBe(TURNS);
  }, 1_200_000);
});
