// The measured operations, each run once through the service's own entry points (the HTTP
// handler, the after-turn consumer, the sweep) on an instrumented runtime. Setup writes go
// through the store directly and are not measured.
import { randomUUID } from 'node:crypto';
import { sessionKey, type SessionRef } from '../../lib/session-ref.js';
import { afterTurnDeps } from '../../lib/runtime.js';
import { apiKeyFor, appendSeeded, chatItems, expectOutcome, httpAs, seeded } from './fixtures.js';
import type { OperationCost, Probe } from './probe.js';

export type Group = 'session' | 'compaction' | 'after-turn' | 'sweep';

export interface MeasuredOperation extends OperationCost {
  group: Group;
  /** What the operation is an instance of, for the ceilings: appends and compactions have targets. */
  counts?: 'append' | 'compaction';
  /** Items the append carried, for items/s. */
  items?: number;
  /** Not run as such: a measured operation plus measured refreshes (ceilings.ts). */
  derivedFrom?: string;
  note?: string;
}

/** Two instances of a per-entity key design, and the partitions they wrote (SPEC of issue 15: "prove it"). */
export interface Proof {
  family: string;
  instances: string[];
  partitions: string[][];
}

export interface SessionOpsResult {
  operations: MeasuredOperation[];
  proofs: Proof[];
}

const SMALL = 40;
/** The one refresh of a compaction's lease and attempt record, priced alone. */
export const REFRESH_OP = 'lease refresh during a long compaction (Redis extend + attempt record extend)';
const LARGE = 1_000;
/** An after-turn session above the default 8,000-token threshold (~100 tokens per item). */
const OVER_THRESHOLD = 200;

export async function measureSessionOps(p: Probe): Promise<SessionOpsResult> {
  const { store } = p.core;
  const tenantId = `cap-${randomUUID().slice(0, 8)}`;
  const http = httpAs(p.http, await apiKeyFor(p.core, tenantId));
  const ops: MeasuredOperation[] = [];
  const proofs: Proof[] = [];
  const m = async (group: Group, name: string, run: () => Promise<unknown>, extra: Partial<MeasuredOperation> = {}) => {
    const cost = await p.measure(name, run);
    ops.push({ group, ...cost, ...extra });
    return cost;
  };
  const path = (ref: SessionRef, tail = '') => `/sessions/${ref.sessionId}${tail}`;

  // The container's first request reads the API key; later ones find it cached (60 s).
  const small = await seeded(store, tenantId, SMALL);
  await m('session', 'GET session (cold container: API-key read)', () => http('GET', path(small)));
  await m('session', 'GET session', () => http('GET', path(small)));

  await m('session', 'create', () => http('POST', '/sessions', { body: { source: 'bench' } }));
  const creates: OperationCost[] = [];
  for (const key of ['k-1', 'k-2']) {
    creates.push(
      await p.measure(`create with Idempotency-Key ${key}`, () =>
        http('POST', '/sessions', { body: { source: 'bench' }, headers: { 'idempotency-key': key } }),
      ),
    );
  }
  ops.push({ group: 'session', ...creates[0]!, name: 'create with Idempotency-Key' });
  await m('session', 'create, retried with the same Idempotency-Key', () =>
    http('POST', '/sessions', { body: { source: 'bench' }, headers: { 'idempotency-key': 'k-1' } }),
  );
  proofs.push(proofOf('create idempotency', ['Idempotency-Key k-1', 'Idempotency-Key k-2'], creates));

  const target = await seeded(store, tenantId, SMALL);
  let next = SMALL;
  for (const n of [1, 10, 98]) {
    await m('session', `append ${n}`, () => http('POST', path(target, '/messages'), { body: { messages: chatItems(n, next) } }), {
      counts: 'append',
      items: n,
    });
    next += n;
  }
  await m(
    'session',
    'append 1 with Idempotency-Key',
    () => http('POST', path(target, '/messages'), { body: { messages: chatItems(1, next++) }, headers: { 'idempotency-key': 'a-1' } }),
    { counts: 'append', items: 1 },
  );

  const large = await seeded(store, tenantId, LARGE);
  await m('session', `GET page (500 of ${LARGE} items)`, () => http('GET', path(large, '/messages')));
  await m('session', `tail 20 (of ${LARGE} items)`, () => http('GET', path(large, '/messages'), { query: { tail: '20' } }));
  await m('session', 'pop last item', () => http('DELETE', path(large, '/messages/last')));
  const doomed = await seeded(store, tenantId, SMALL);
  await m('session', `delete (${SMALL} items; purge in the background)`, () => http('DELETE', path(doomed)));

  for (const [mode, n] of [
    ['rotate', SMALL],
    ['rotate', LARGE],
    ['in_place', SMALL],
    ['in_place', LARGE],
  ] as const) {
    const ref = await seeded(store, tenantId, n);
    const label = mode === 'rotate' ? `compress rotate, ${n} items` : `compress in place, ${n} items (archive in the background)`;
    await m('compaction', label, async () => expectOutcome(await http('POST', path(ref, '/compress'), { body: { mode } }), 'compressed'), {
      counts: 'compaction',
    });
  }
  // A chain's later rotations also move the root's tip pointer (the same transaction).
  const root = await seeded(store, tenantId, SMALL);
  const child = {
    tenantId,
    sessionId: expectOutcome(await http('POST', path(root, '/compress'), { body: { mode: 'rotate' } }), 'compressed').sessionId,
  };
  await appendSeeded(store, child, SMALL, SMALL);
  await m(
    'compaction',
    `compress rotate, ${SMALL} items, 2nd in a chain (root tip updated)`,
    async () => expectOutcome(await http('POST', path(child, '/compress'), { body: { mode: 'rotate' } }), 'compressed'),
    { counts: 'compaction' },
  );

  // What each refresh of a long compaction adds (the refresher's refresh, then its record extend):
  // measured alone, so compactions of any length can be priced from it (ceilings.ts).
  const slow = await seeded(store, tenantId, SMALL);
  const lease = await p.core.lease.tryAcquire(sessionKey(slow), { ttlMs: 30_000, holder: 'slow-compaction' });
  if (!lease.acquired) throw new Error('bench: could not take the lease');
  const begun = await store.beginAttempt(slow, {
    holder: lease.token,
    leaseExpiresAt: lease.expiresAt,
    activityLabel: 'compaction started',
  });
  await m('compaction', REFRESH_OP, async () => {
    const r = await p.core.lease.refresh(lease, 30_000);
    if (!r.refreshed || !(await store.extendAttempt(slow, begun.attempt, r.expiresAt))) throw new Error('bench: refresh failed');
  });
  await store.abandonAttempt(slow, begun.attempt);
  await p.core.lease.release(lease);

  const contested = await seeded(store, tenantId, SMALL);
  const held = await p.core.lease.tryAcquire(sessionKey(contested), { ttlMs: 30_000, holder: 'another-caller' });
  if (!held.acquired) throw new Error('bench: could not hold the lease');
  await m('compaction', 'compress, lease held by another caller (loser)', async () =>
    expectOutcome(await http('POST', path(contested, '/compress'), { body: { mode: 'rotate' } }), 'skipped', 'locked'),
  );
  await p.core.lease.release(held);

  const { consumer } = await afterTurnDeps(p.rt);
  const turn = (ref: SessionRef, messageId: string) => async () => {
    const r = await consumer.processBatch([{ messageId, body: JSON.stringify({ ...ref, origin: 'turn' }) }], {
      functionName: 'capacity-bench',
      awsRequestId: randomUUID(),
      getRemainingTimeInMillis: () => 60_000,
    });
    if (r.failedMessageIds.length) throw new Error(`after-turn failed: ${JSON.stringify(r.records)}`);
    return r;
  };
  const quiet = await seeded(store, tenantId, 10);
  await m('after-turn', 'after-turn check, below the threshold (10 items)', turn(quiet, `msg-${randomUUID()}`));
  const due: OperationCost[] = [];
  const ids = [`msg-${randomUUID()}`, `msg-${randomUUID()}`];
  for (const id of ids) {
    const ref = await seeded(store, tenantId, OVER_THRESHOLD);
    due.push(await p.measure(`after-turn ${id}`, turn(ref, id)));
  }
  ops.push({
    group: 'after-turn',
    ...due[0]!,
    name: `after-turn check, above the threshold (${OVER_THRESHOLD} items: compacts, rotate)`,
    counts: 'compaction',
  });
  proofs.push(
    proofOf(
      'after-turn idempotency',
      ids.map((id) => `message id ${id.slice(0, 12)}…`),
      due,
    ),
  );
  const redelivered = await seeded(store, tenantId, OVER_THRESHOLD);
  const id = `msg-${randomUUID()}`;
  await turn(redelivered, id)();
  await m('after-turn', 'after-turn, the same message redelivered', turn(redelivered, id));
  return { operations: ops, proofs };
}

function proofOf(family: string, instances: string[], costs: readonly OperationCost[]): Proof {
  return {
    family,
    instances,
    partitions: costs.map((c) => [...new Set(c.partitions.filter((u) => u.family === family).map((u) => u.partition))]),
  };
}
