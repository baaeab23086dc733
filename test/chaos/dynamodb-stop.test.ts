// DynamoDB Local faults on an instance this file owns.
// 1. SIGKILL it while the commit transaction is in flight, then restart it on the same port.
//    DynamoDB Local runs in memory, so the restart loses every item: this case can only prove
//    that the attempt fails with an error (no hang, no false "compressed"), that the lease is
//    released anyway (I3, C2), and that a new attempt works once the store is back.
// 2. SIGSTOP it during the commit for longer than the lease TTL while a rival starts (a paused
//    store, the data survives), then SIGCONT: at most one child and one "rotated" (I1, I2, L6),
//    and after a sweep no attempt record or orphan message is left (S1, S2). Background appends and
//    reads run on this and another session during the stall: every acknowledged one is kept (I4).
// 3. SIGSTOP it as a compress commits, through the HTTP handler with short DynamoDB timeouts, so the
//    commit and the read that would verify it both time out (issue 22 finding 1): the answer is
//    503 outcome_unknown, never "unavailable" ("nothing applied"), while background traffic runs.
//    The figures go to test/chaos/.last-stall.json, bench/README's fault table.
// 4. P6 (issue 35 item 3, the 90 s lock): a long compress through the HTTP handler, a stall
//    during it and the invocation's deadline: answered 503, the attempt works on after the store
//    resumes, yet it renews nothing past its deadline, so within one lease TTL another caller
//    gets the lease and commits.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ScanCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTable } from '../../infra/table.js';
import type { ApiDeps } from '../../lib/api/http-app.js';
import { handleHttpRequest } from '../../functions/adapters/api-gateway.js';
import { createDynamoClient } from '../../lib/aws-clients.js';
import { DynamoLineageStore } from '../../lib/lineage/dynamo/store.js';
import { asIs } from '../../lib/lineage/prepare.js';
import { silentLogger } from '../../lib/logger.js';
import { startDynamoDbLocal, type LocalProcess } from '../../infra/local/processes.js';
import { compactSession, type CompactionOutcome } from '../../lib/compaction/index.js';
import { sessionKey, type SessionRef } from '../../lib/session-ref.js';
import { runSweep } from '../../lib/sweep/run-sweep.js';
import { recordCounts } from '../support/chaos/counts.js';
import { makeCoordinator, type Coordinator, seedConversation } from '../fixtures/coordinator.js';
import { conversation, fixedEngine, sleep } from '../fixtures/engines.js';
import { waitLeaseFree } from '../support/chaos/invariants.js';

const TABLE = 'chaos-dynamodb-stop';
const TTL_MS = 1000;
let ddbProc: LocalProcess;
let coord: Coordinator;
/** Set by a test; runs as the commit transaction is about to be sent. */
let beforeCommit: (() => Promise<void>) | undefined;
const counts = { racesRun: 0, nodeFaultsInjected: 0, forksFound: 0, leakedLeases: 0 };
export const lastStallFile = fileURLToPath(new URL('./.last-stall.json', import.meta.url));
/** The stall cases' figures (bench/README's fault table). */
const stall = {
  backgroundRequests: 0,
  backgroundAcknowledged: 0,
  backgroundFailed: 0,
  acknowledgedLost: 0,
  compressAnswers: {} as Record<string, number>,
  compactionsLanded: 0,
  nothingAppliedButLanded: 0,
};

/**
 * Background traffic for a stall: appends (one marker item each) to `target` and to `other`, and
 * reads of `other`, started now and settled later. Returns what was acknowledged, per session.
 */
function backgroundTraffic(target: SessionRef, other: SessionRef, n: number): Promise<{ acked: Map<string, string[]>; failed: number }> {
  const acked = new Map<string, string[]>([
    [target.sessionId, []],
    [other.sessionId, []],
  ]);
  let failed = 0;
  const ops = Array.from({ length: n }, async (_, i) => {
    stall.backgroundRequests++;
    try {
      if (i % 3 === 2) {
        await coord.store.getSession(other);
      } else {
        const ref = i % 3 === 0 ? target : other;
        const marker = `bg-${i}-${randomUUID().slice(0, 6)}`;
        await coord.store.appendItems(ref, { prepare: asIs([{ role: 'user', content: marker }]) });
        acked.get(ref.sessionId)!.push(marker);
      }
      stall.backgroundAcknowledged++;
    } catch {
      // 503s (unavailable / outcome_unknown) and 409s (ended by the rotation) are honest answers.
      failed++;
      stall.backgroundFailed++;
    }
  });
  return Promise.all(ops).then(() => ({ acked, failed }));
}

/**
 * Every acknowledged marker is in the live session's transcript exactly once (I4). `summarized`:
 * a compaction may have read some of them and summarized them away, so only "never twice" holds.
 */
async function expectKept(ref: SessionRef, markers: readonly string[], summarized = false): Promise<void> {
  const children = await coord.store.children(ref);
  const live = children[0] ? { tenantId: ref.tenantId, sessionId: children[0].sessionId } : ref;
  const contents = (await coord.store.readAll(live)).map((m) => (m as { content?: unknown }).content);
  for (const marker of markers) {
    const seen = contents.filter((c) => c === marker).length;
    if (seen > 1 || (seen === 0 && !summarized)) stall.acknowledgedLost++;
    if (summarized) expect(seen, `acknowledged append ${marker}`).toBeLessThanOrEqual(1);
    else expect(seen, `acknowledged append ${marker}`).toBe(1);
  }
}

async function startStore(port?: number): Promise<void> {
  ddbProc = await startDynamoDbLocal(port);
}

beforeAll(async () => {
  await startStore();
  coord = await makeCoordinator({ dynamodbEndpoint: ddbProc.url, tableName: TABLE });
  await ensureTable(coord.ddb, TABLE);
  coord.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'TransactWriteItemsCommand' && beforeCommit) {
        const hook = beforeCommit;
        beforeCommit = undefined;
        await hook();
      }
      return next(args);
    },
    { step: 'initialize', name: 'chaosBeforeCommit' },
  );
});
afterAll(async () => {
  recordCounts('dynamodb-stop', counts);
  writeFileSync(lastStallFile, JSON.stringify({ ...stall, finishedAt: new Date().toISOString() }, null, 2));
  await coord?.close();
  if (ddbProc) {
    try {
      process.kill(ddbProc.pid, 'SIGCONT');
    } catch {
      // already gone
    }
    await ddbProc.stop('SIGKILL');
  }
});

async function seeded(): Promise<SessionRef> {
  const tenantId = `chaos-ddb-${randomUUID()}`;
  return seedConversation(coord.store, tenantId, conversation(8));
}

/** pk -> item count for a tenant, scanned from this file's own small table. */
async function tenantItems(ddb: DynamoDBClient, tenantId: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  let start: Record<string, import('@aws-sdk/client-dynamodb').AttributeValue> | undefined;
  do {
    const page = await ddb.send(
      new ScanCommand({
        TableName: TABLE,
        FilterExpression: 'begins_with(pk, :p)',
        ExpressionAttributeValues: { ':p': { S: `T#${tenantId}#` } },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) {
      const pk = item.pk!.S!;
      out.set(pk, [...(out.get(pk) ?? []), item.sk!.S!]);
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

describe('DynamoDB Local stopped during a commit', () => {
  it('I3 C2 C10: SIGKILL while the commit is in flight: the attempt errors, the lease is released, a restart works', async () => {
    const ref = await seeded();
    const engine = fixedEngine();
    beforeCommit = async () => {
      await ddbProc.stop('SIGKILL');
      counts.nodeFaultsInjected++;
    };
    counts.racesRun++;
    let outcome: CompactionOutcome | undefined;
    let error: unknown;
    try {
      outcome = await compactSession(
        { lease: coord.lease, store: coord.store, engine, leaseTtlMs: 5000 },
        { ref, mode: 'rotate', origin: 'manual', holder: 'ddb-kill' },
      );
    } catch (err) {
      error = err;
    }
    expect(beforeCommit).toBeUndefined(); // the fault really fired at the commit
    expect(engine.calls).toBe(1);
    // Never a false success: either an error reaches the caller or a non-committing outcome.
    if (outcome) expect(outcome.outcome).not.toBe('compressed');
    else expect(error).toBeInstanceOf(Error);
    // The lease lives in Redis, which is fine: it was released, not left to expire.
    expect(await coord.lease.holderOf(sessionKey(ref))).toBeNull();

    await startStore(ddbProc.port);
    await ensureTable(coord.ddb, TABLE);
    const fresh = await seeded();
    const again = await compactSession(
      { lease: coord.lease, store: coord.store, engine: fixedEngine(), leaseTtlMs: 5000 },
      { ref: fresh, mode: 'rotate', origin: 'manual', holder: 'ddb-back' },
    );
    expect(again.outcome).toBe('compressed');
    expect(await coord.store.children(fresh)).toHaveLength(1);
  });

  it('I1 I2 L6 S1 S2: store paused (SIGSTOP) past the lease TTL during a commit while a rival starts: one child, no orphan after a sweep', async () => {
    const ref = await seeded();
    const other = await seeded();
    let rival: Promise<CompactionOutcome> | undefined;
    let traffic: ReturnType<typeof backgroundTraffic> | undefined;
    beforeCommit = async () => {
      process.kill(ddbProc.pid, 'SIGSTOP');
      counts.nodeFaultsInjected++;
      traffic = backgroundTraffic(ref, other, 30);
      // The paused holder's lease expires; a rival takes it and starts its own attempt.
      await sleep(TTL_MS + 300);
      rival = compactSession(
        { lease: coord.lease, store: coord.store, engine: fixedEngine(), leaseTtlMs: TTL_MS },
        { ref, mode: 'rotate', origin: 'turn', holder: 'rival' },
      );
      await sleep(300);
      process.kill(ddbProc.pid, 'SIGCONT');
    };
    counts.racesRun += 2;
    const settle = (p: Promise<CompactionOutcome>) =>
      p.then(
        (o) => o.outcome + (o.outcome === 'compressed' ? `:${o.sessionId}` : ''),
        (e: unknown) => `error:${(e as Error).name}`,
      );
    const first = await settle(
      compactSession(
        { lease: coord.lease, store: coord.store, engine: fixedEngine(), leaseTtlMs: TTL_MS },
        { ref, mode: 'rotate', origin: 'turn', holder: 'paused' },
      ),
    );
    expect(rival).toBeDefined();
    const second = await settle(rival!);
    expect(traffic).toBeDefined();
    const { acked } = await traffic!;

    const children = await coord.store.children(ref);
    counts.forksFound += Math.max(0, children.length - 1);
    expect(children.length).toBeLessThanOrEqual(1);
    const rotated = [first, second].filter((o) => o.startsWith('compressed:'));
    expect(rotated.length).toBe(children.length);
    if (children[0]) expect(rotated).toEqual([`compressed:${children[0].sessionId}`]);

    const free = await waitLeaseFree(coord.lease, ref, TTL_MS + 5000);
    if (!free) counts.leakedLeases++;
    expect(free).toBe(true);
    const sweep = await runSweep({ store: coord.store, now: () => Date.now() + 60_000 });
    expect(sweep.forksFound).toBe(0);
    expect((await coord.store.getSession(ref))?.attempt).toBeUndefined();
    // Every partition left for this tenant is a real session (has META): no orphan child messages.
    const items = await tenantItems(coord.ddb, ref.tenantId);
    // (A conversation's own record, CONV, has its own partition and no META: it is not an orphan.)
    for (const [pk, sks] of items) if (!sks.includes('CONV')) expect(sks, `orphan items under ${pk}`).toContain('META');
    // The session's partition, its children's, and its conversation's record (K1).
    expect(items.size).toBe(2 + children.length);
    // I4: the appends acknowledged during the stall are in the live transcript, once (on the compacted
    // session the rival may have read and summarized some: never twice there).
    await expectKept(ref, acked.get(ref.sessionId)!, true);
    await expectKept(other, acked.get(other.sessionId)!);
  });

  it.each(['rotate', 'in_place'] as const)(
    'I2 F1: stalled as a compress (%s) commits, the commit and its verification read time out: 503 outcome_unknown, never "unavailable"',
    async (mode) => {
      // Short budgets (one try of 400 ms) so both the commit and the verification read time out during the stall.
      const fastDdb = createDynamoClient({ endpoint: ddbProc.url, maxAttempts: 1, requestTimeoutMs: 400, connectTimeoutMs: 300 });
      let stopped = false;
      fastDdb.middlewareStack.add(
        (next, context) => async (args) => {
          if (context.commandName === 'TransactWriteItemsCommand' && !stopped) {
            stopped = true;
            process.kill(ddbProc.pid, 'SIGSTOP');
            counts.nodeFaultsInjected++;
          }
          return next(args);
        },
        { step: 'initialize', name: 'chaosStallAtCommit' },
      );
      const fastStore = new DynamoLineageStore({ client: fastDdb, tableName: TABLE });
      const ref = await seeded();
      const other = await seeded();
      const before = await coord.store.getSession(ref);
      const deps: ApiDeps = {
        store: fastStore,
        compact: (req) => compactSession({ lease: coord.lease, store: fastStore, engine: fixedEngine(), leaseTtlMs: 5000 }, req),
        publisher: { publish: () => Promise.resolve() },
        logger: silentLogger,
        apiKeys: { resolve: () => Promise.resolve(ref.tenantId) },
      };
      counts.racesRun++;
      const answered = handleHttpRequest(
        {
          rawPath: `/sessions/${ref.sessionId}/compress`,
          requestContext: { http: { method: 'POST' } },
          headers: { authorization: 'Bearer chaos', 'content-type': 'application/json' },
          body: JSON.stringify({ mode }),
          isBase64Encoded: false,
        } as never,
        deps,
        { requestId: `stall-${mode}` },
      );
      // Background traffic on the ordinary client while the store is stopped (it waits, then lands).
      const started = Date.now();
      while (!stopped && Date.now() - started < 10_000) await sleep(10);
      expect(stopped).toBe(true);
      const traffic = backgroundTraffic(other, other, 24);
      const res = await answered;
      process.kill(ddbProc.pid, 'SIGCONT');
      const { acked } = await traffic;
      fastDdb.destroy();

      const body = JSON.parse(res.body ?? '{}') as { error?: { code?: string } };
      const code = body.error?.code ?? String(res.statusCode);
      stall.compressAnswers[code] = (stall.compressAnswers[code] ?? 0) + 1;
      // What DynamoDB did with the stalled commit once it resumed (the sweep would clear a stale attempt).
      // Read once the background traffic settled, i.e. after DynamoDB resumed and worked its queue.
      const now = await coord.store.getSession(ref);
      const landed =
        mode === 'rotate' ? (await coord.store.children(ref)).length > 0 : (now?.generation ?? 0) !== (before?.generation ?? 0);
      if (landed) stall.compactionsLanded++;
      if (landed && code === 'unavailable') stall.nothingAppliedButLanded++;
      expect([res.statusCode, code]).toEqual([503, 'outcome_unknown']);
      expect(res.headers?.['retry-after']).toBeDefined();
      await expectKept(other, acked.get(other.sessionId)!);
      expect(await waitLeaseFree(coord.lease, ref, 10_000)).toBe(true);
    },
  );

  it('P6: a compress answered at its deadline during a DynamoDB stall, its attempt still at work after the stall, blocks no one past one lease TTL', async () => {
    const ref = await seeded();
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    let engineStarted = false;
    // The long compress: it runs until the test lets it go, well past the answer.
    const longEngine = {
      ...fixedEngine(),
      async compress(
        t: Parameters<ReturnType<typeof fixedEngine>['compress']>[0],
        o: Parameters<ReturnType<typeof fixedEngine>['compress']>[1],
      ) {
        engineStarted = true;
        await held;
        return fixedEngine().compress(t, o);
      },
    };
    // Longer than the stall, so the lease outlives it: only the refresher decides whether it lapses.
    const LEASE_MS = 4000;
    const deps: ApiDeps = {
      store: coord.store,
      compact: (req) =>
        compactSession(
          {
            lease: coord.lease,
            store: coord.store,
            engine: longEngine,
            leaseTtlMs: LEASE_MS,
            refreshIntervalMs: 300,
            commitSafetyMarginMs: 1000,
          },
          req,
        ),
      publisher: { publish: () => Promise.resolve() },
      logger: silentLogger,
      apiKeys: { resolve: () => Promise.resolve(ref.tenantId) },
    };
    counts.racesRun++;
    const end = Date.now() + 3000;
    const answered = handleHttpRequest(
      {
        rawPath: `/sessions/${ref.sessionId}/compress`,
        requestContext: { http: { method: 'POST' } },
        headers: { authorization: 'Bearer chaos', 'content-type': 'application/json' },
        body: JSON.stringify({ mode: 'rotate' }),
        isBase64Encoded: false,
      } as never,
      deps,
      { requestId: 'p6-stall', remainingTimeMs: () => end - Date.now() },
    );
    const started = Date.now();
    while (!engineStarted && Date.now() - started < 20_000) await sleep(10);
    expect(engineStarted).toBe(true);
    // The stall, during the compress, until past the answer.
    process.kill(ddbProc.pid, 'SIGSTOP');
    counts.nodeFaultsInjected++;
    let res: Awaited<typeof answered>;
    try {
      res = await answered;
      await sleep(500);
    } finally {
      process.kill(ddbProc.pid, 'SIGCONT');
    }
    expect(res.statusCode).toBe(503);
    try {
      // The store is back and the attempt still works: before the fix its refresher renewed the lease
      // (and the record's expiry) from here on, for as long as the attempt ran.
      const free = await waitLeaseFree(coord.lease, ref, LEASE_MS + 5000);
      if (!free) counts.leakedLeases++;
      expect(free).toBe(true);
      const rival = await compactSession(
        { lease: coord.lease, store: coord.store, engine: fixedEngine(), leaseTtlMs: 10_000 },
        { ref, mode: 'rotate', origin: 'manual', holder: 'next' },
      );
      expect(rival.outcome).toBe('compressed');
      expect(await coord.store.children(ref)).toHaveLength(1);
    } finally {
      release();
    }
  }, 60_000);
});
