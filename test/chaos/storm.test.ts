// The storm (issue 11): 60 s (CHAOS_SCALE scales it) of 8 appenders (10 new items/s each, an
// Idempotency-Key per item, following 409s to the live session) and 16 compactors in mixed
// modes on a few sessions, one of them hot (4 appenders), all through the HTTP API under
// serverless-offline, on a stack this file owns. Mid-storm one Redis node is SIGKILLed and
// restarted, and DynamoDB Local is SIGSTOPped for 5 s (requests then fail with 503 and are
// retried). Afterwards a sweep runs and a full table scan must show: no fork (I1, I2), every
// acknowledged item accounted for exactly once (I4; test/support/chaos/storm-ledger.ts), at
// least one committed compaction per session, and no lease, attempt, orphan or task left (I3,
// S1, S2).
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionKey } from '../../lib/session-ref.js';
import { runSweep } from '../../lib/sweep/run-sweep.js';
import { recordCounts, scaled } from '../support/chaos/counts.js';
import { seeded } from '../fixtures/transcripts/index.js';
import { sleep } from '../fixtures/engines.js';
import { startOwnStack, type OwnStack } from '../support/chaos/own-stack.js';
import { emptyTally, markerOf, runAppender, runCompactor, stormItem, type StormHttp, type Tips } from '../support/chaos/storm-clients.js';
import { buildLedger, scanTable, type Ledger, type ScannedItem } from '../support/chaos/storm-ledger.js';

const DURATION_MS = Math.max(20, scaled(60)) * 1000;
/** 8 appenders and 16 compactors over five sessions; the first is the hot one. */
const SESSIONS = [
  { appenders: 4, compactors: 6 },
  { appenders: 1, compactors: 3 },
  { appenders: 1, compactors: 3 },
  { appenders: 1, compactors: 2 },
  { appenders: 1, compactors: 2 },
];
const LEASE_TTL_MS = 5_000;
const SEED_ITEMS = 40;
const DYNAMO_STOP_MS = 5_000;
export const lastStormFile = fileURLToPath(new URL('./.last-storm.json', import.meta.url));

const headersOf = (http: StormHttp) => ({ authorization: `Bearer ${http.key}`, 'content-type': 'application/json' });

async function createSession(http: StormHttp): Promise<string> {
  const created = await fetch(`${http.baseUrl}/sessions`, { method: 'POST', headers: headersOf(http), body: '{"source":"storm"}' });
  expect(created.status).toBe(201);
  return ((await created.json()) as { session: { sessionId: string } }).session.sessionId;
}

/** A few seconds of appends first: a fresh DynamoDB Local is several times slower until its JIT has warmed up. */
async function warmUp(http: StormHttp): Promise<void> {
  const id = await createSession(http);
  const tally = emptyTally();
  const until = Date.now() + 8_000;
  await Promise.all(
    Array.from({ length: 8 }, (_, a) =>
      runAppender({
        http,
        chain: id,
        tips: new Map([[id, id]]),
        name: `warm${a}`,
        perSecond: 20,
        maxInFlight: 2,
        until,
        deadline: until + 10_000,
        tally,
      }),
    ),
  );
}

describe('storm: appends and compactions under a Redis node kill and a DynamoDB stop', () => {
  let stack: OwnStack;
  const tenant = `storm-${randomUUID().slice(0, 8)}`;
  const counts = { racesRun: 0, nodeFaultsInjected: 0, forksFound: 0, leakedLeases: 0 };

  beforeAll(async () => {
    stack = await startOwnStack({
      tableName: 'chaos-storm',
      env: {
        LEASE_TTL_MS: String(LEASE_TTL_MS),
        // A stalled DynamoDB fails a call in about 2 x 2 s (then 503), well inside the function timeout.
        DYNAMODB_REQUEST_TIMEOUT_MS: '2000',
        DYNAMODB_MAX_ATTEMPTS: '2',
        DYNAMODB_CONNECT_TIMEOUT_MS: '500',
        // API keys are read again every second, so the stop also meets authentication.
        API_KEY_CACHE_TTL_SECONDS: '1',
        // One tenant offers about 80 appends/s plus its compactors: the per-tenant limits (their own
        // tests: test/e2e/http/tenant-limits.test.ts) would answer 429 to the load this storm is about.
        RATE_LIMIT_REQUESTS_PER_SECOND: '0',
        RATE_LIMIT_COMPRESSIONS_PER_MINUTE: '0',
        RATE_LIMIT_BODY_BYTES_PER_SECOND: '0',
      },
    });
  }, 180_000);
  afterAll(async () => {
    recordCounts('storm', counts);
    await stack?.stop();
  });

  it(
    'I1 I2 I3 I4 S1 S2: no fork, no loss, no duplicate, a compaction per session, nothing left after a sweep',
    async () => {
      const http: StormHttp = { baseUrl: stack.service.baseUrl, key: await stack.createApiKey(tenant) };
      const tally = emptyTally();
      // Each session starts with a transcript worth compacting, so even a slow machine's first compaction has work.
      const roots: string[] = [];
      for (let i = 0; i < SESSIONS.length; i++) {
        const id = await createSession(http);
        const seed = Array.from({ length: SEED_ITEMS }, (_, n) => stormItem(`seed${i}-${n}`, n));
        const res = await fetch(`${http.baseUrl}/sessions/${id}/messages`, {
          method: 'POST',
          headers: headersOf(http),
          body: JSON.stringify({ messages: seed }),
        });
        expect(res.status).toBe(200);
        tally.acks.push(...seed.map((it) => ({ marker: markerOf(it.content)!, sessionId: id })));
        roots.push(id);
      }
      await warmUp(http);
      const tips: Tips = new Map(roots.map((r) => [r, r]));
      const random = seeded(20261);
      const t0 = Date.now();
      const until = t0 + DURATION_MS;
      const clients: Promise<void>[] = [];
      SESSIONS.forEach((s, i) => {
        for (let a = 0; a < s.appenders; a++) {
          clients.push(
            runAppender({
              http,
              chain: roots[i]!,
              tips,
              name: `s${i}a${a}`,
              perSecond: 10,
              maxInFlight: 4,
              until,
              deadline: until + 60_000,
              tally,
            }),
          );
        }
        for (let c = 0; c < s.compactors; c++) clients.push(runCompactor({ http, chain: roots[i]!, tips, until, tally, random }));
      });
      const stop = { from: 0, to: 0 };
      const faults = (async () => {
        const at = (fraction: number) => sleep(t0 + fraction * DURATION_MS - Date.now());
        await at(0.25);
        await stack.nodes.kill(0);
        counts.nodeFaultsInjected++;
        await at(0.45);
        await stack.nodes.restart(0);
        await at(0.6);
        await stack.pauseDynamo();
        stop.from = Date.now();
        counts.nodeFaultsInjected++;
        await sleep(DYNAMO_STOP_MS);
        stack.resumeDynamo();
        stop.to = Date.now();
      })();
      await Promise.all([...clients, faults]);
      const stormSeconds = (Date.now() - t0) / 1000;
      counts.racesRun = tally.compressRequests;

      // Every lease the storm took has expired or was released; then the sweep (its clock past every grace period).
      await sleep(LEASE_TTL_MS + 1000);
      const sweep = await runSweep({ store: stack.store, now: () => Date.now() + 10 * 60_000 });
      const items: ScannedItem[] = await scanTable(stack.ddb, stack.tableName);
      const ledger: Ledger = buildLedger({ items, tenantId: tenant, roots, acks: tally.acks, markerOf: (it) => markerOf(it.content) });
      const sessions = items
        .filter((it) => it.sk === 'META' && String(it.pk).startsWith(`T#${tenant}#S#`))
        .map((it) => String(it.sessionId));
      const leases = (
        await Promise.all(
          sessions.map(async (id) => ((await stack.lease.holderOf(sessionKey({ tenantId: tenant, sessionId: id }))) === null ? null : id)),
        )
      ).filter(Boolean);
      counts.forksFound = ledger.forks.length + sweep.forksFound;
      counts.leakedLeases = leases.length;

      const perAppender = new Map<string, number>();
      for (const a of tally.acks) {
        const name = /^(s\d+a\d+)-/.exec(a.marker)?.[1];
        if (name) perAppender.set(name, (perAppender.get(name) ?? 0) + 1);
      }
      const rates = [...perAppender.values()].map((n) => n / (DURATION_MS / 1000));
      const report = {
        seconds: Math.round(stormSeconds),
        appendsAcknowledged: tally.acks.length - SESSIONS.length * SEED_ITEMS,
        seedItems: SESSIONS.length * SEED_ITEMS,
        appendsPerSecondPerAppender: {
          min: Math.min(...rates).toFixed(1),
          mean: (rates.reduce((a, b) => a + b, 0) / rates.length).toFixed(1),
        },
        appendRequests: tally.appendRequests,
        follows409: tally.follows409,
        compressRequests: tally.compressRequests,
        compactionsCommitted: Object.values(ledger.stepsPerRoot).reduce((a, b) => a + b, 0),
        rotationsAnswered: tally.rotations.length,
        compactionsPerSession: Object.values(ledger.stepsPerRoot),
        answers: tally.answers,
        // 503s answered while DynamoDB was stopped (or within 10 s after: requests queued behind it), and the others.
        unavailable: {
          duringStop: tally.unavailableAt.filter((t) => t >= stop.from && t <= stop.to + 10_000).length,
          otherwise: tally.unavailableAt.filter((t) => t < stop.from || t > stop.to + 10_000).length,
        },
        accountedLive: ledger.live,
        accountedSummarized: ledger.summarized,
        forks: ledger.forks.length,
        losses: ledger.losses.length,
        duplicates: ledger.duplicates.length,
        unacknowledged: tally.unacked.length,
        leftover: {
          leases: leases.length,
          attempts: ledger.attemptsLeft.length,
          orphans: ledger.orphans.length,
          tasks: ledger.tasksLeft.length,
        },
        sweep: {
          expiredAttemptsCleaned: sweep.expiredAttemptsCleaned,
          orphanMessagesRemoved: sweep.orphanMessagesRemoved,
          tasksRun: sweep.tasksRun,
          forksFound: sweep.forksFound,
        },
        scale: DURATION_MS / 60_000,
        finishedAt: new Date().toISOString(),
      };
      console.log(`storm: ${JSON.stringify(report)}`);
      writeFileSync(lastStormFile, JSON.stringify(report, null, 2) + '\n');
      if (tally.unexpected.length > 0) console.log(`storm: service log tail:\n${stack.service.log().slice(-8000)}`);

      expect(tally.unexpected).toEqual([]);
      expect(tally.unacked).toEqual([]);
      expect(ledger.forks).toEqual([]);
      expect(sweep.forksFound).toBe(0);
      expect(ledger.losses).toEqual([]);
      expect(ledger.duplicates).toEqual([]);
      expect(ledger.live + ledger.summarized).toBe(tally.acks.length);
      // I2: every "you rotated" answer names the one child its parent has.
      const childOf = new Map(
        items.filter((it) => it.sk === 'META' && it.parentSessionId).map((it) => [String(it.parentSessionId), String(it.sessionId)]),
      );
      for (const r of tally.rotations) expect(childOf.get(r.parent)).toBe(r.child);
      for (const root of roots) expect(ledger.stepsPerRoot[root], `compactions committed on ${root}`).toBeGreaterThanOrEqual(1);
      expect(leases).toEqual([]);
      expect(ledger.attemptsLeft).toEqual([]);
      expect(ledger.orphans).toEqual([]);
      expect(ledger.tasksLeft).toEqual([]);
    },
    DURATION_MS + 300_000,
  );
});

describe('storm ledger (the accounting checks itself on a known history)', () => {
  const tenantId = 't';
  const meta = (sessionId: string, extra: Record<string, unknown> = {}) => ({
    pk: `T#t#S#${sessionId}`,
    sk: 'META',
    sessionId,
    generation: 0,
    lastSeq: 0,
    ...extra,
  });
  const msg = (sessionId: string, generation: number, seq: number, item: object, archived = false) => ({
    pk: `T#t#S#${sessionId}`,
    sk: `MSG#${generation}#${seq}`,
    generation,
    seq,
    body: JSON.stringify(item),
    ...(archived ? { expiresAt: 1 } : {}),
  });
  const it_ = (m: string) => stormItem(m, Number(m.slice(1)));
  const summary = (n: number) => ({ role: 'assistant', content: `[CONTEXT COMPACTION] pass ${n}` });
  const ledgerOf = (items: object[], acks: string[][]) =>
    buildLedger({
      items: items as ScannedItem[],
      tenantId,
      roots: ['P'],
      acks: acks.map(([marker, sessionId]) => ({ marker: marker!, sessionId: sessionId! })),
      markerOf: (x) => markerOf(x.content),
    });
  // P: m0..m4, in place to gen 5 = [m0, S1, m3, m4(tail), m5 (appended after)], rotated to C = [m0, S2, m5, m6 (tail)].
  const history = (): object[] => [
    meta('P', { generation: 5, lastSeq: 5, childSessionId: 'C' }),
    ...['m0', 'm1', 'm2', 'm3', 'm4'].map((m, i) => msg('P', 0, i + 1, it_(m), true)),
    ...[it_('m0'), summary(1), it_('m3'), it_('m4'), it_('m5')].map((x, i) => msg('P', 5, i + 1, x)),
    meta('C', { parentSessionId: 'P', lastSeq: 4 }),
    ...[it_('m0'), summary(2), it_('m5'), it_('m6')].map((x, i) => msg('C', 0, i + 1, x)),
  ];
  const acks = [
    ['m0', 'P'],
    ['m1', 'P'],
    ['m2', 'P'],
    ['m3', 'P'],
    ['m4', 'P'],
    ['m5', 'P'],
    ['m6', 'C'],
  ];

  it('a clean history: two steps, everything accounted for, nothing left', () => {
    const l = ledgerOf(history(), acks);
    expect(l).toMatchObject({
      forks: [],
      losses: [],
      duplicates: [],
      orphans: [],
      attemptsLeft: [],
      tasksLeft: [],
      stepsPerRoot: { P: 2 },
    });
    expect([l.live, l.summarized]).toEqual([3, 4]);
  });

  it('finds a tail item a step dropped, an acknowledged item that is nowhere, a duplicate, a fork and leftovers', () => {
    // The in-place step lost m4, the tail it should have carried.
    const dropped = history().filter((x) => (x as { sk: string; pk: string }).pk !== 'T#t#S#P' || (x as { sk: string }).sk !== 'MSG#5#4');
    expect(ledgerOf(dropped, acks).losses.join()).toMatch(/not carried verbatim/);
    expect(ledgerOf(history(), [...acks, ['m9', 'C']]).losses).toEqual(['m9: acknowledged by C, found nowhere']);
    expect(
      ledgerOf(
        [...history(), msg('C', 0, 5, it_('m1'))].map((x) =>
          (x as { sk: string }).sk === 'META' && (x as { sessionId: string }).sessionId === 'C' ? { ...x, lastSeq: 5 } : x,
        ),
        acks,
      ).duplicates,
    ).toEqual(['m1 back in transcript 2 of C after it was summarized at step 1']);
    expect(ledgerOf([...history(), meta('D', { parentSessionId: 'P' })], acks).forks).toEqual(['P -> C, D']);
    const left = ledgerOf(
      [...history(), msg('P', 7, 1, it_('m7')), msg('X', 0, 1, it_('m8')), { pk: 'T#t#S#P', sk: 'TASK#archive#0000000005' }],
      acks,
    );
    expect([left.orphans.length, left.tasksLeft.length]).toEqual([2, 1]);
  });
});
