// Shared helpers for compaction tests: real Redis + DynamoDB Local clients (from the vitest
// global setup), fresh sessions, small test engines and a session snapshot for
// "nothing changed" assertions.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { createDynamoClient, createRedisClients, waitForRedis } from '../../lib/aws-clients.js';
import type { CompressionEngine, CompressOptionName, CompressOptions, CompressResult, Transcript } from '../../lib/compressors/types.js';
import type { CompactionDeps, CompactionOutcome, RefresherFactory } from '../../lib/compaction/types.js';
import { SUMMARY_PREFIX, type Item, type ItemFormat } from '../../lib/items/types.js';
import { DEFAULT_LEASE_KEY_PREFIX, LeaseRefresher, SessionLease } from '../../lib/lease/index.js';
import { DynamoLineageStore } from '../../lib/lineage/dynamo/store.js';
import { asIs } from '../../lib/lineage/prepare.js';
import type { SessionRecord } from '../../lib/lineage/types.js';
import { sessionKey, type SessionRef } from '../../lib/session-ref.js';

/** One independent contender: its own Redis connections, DynamoDB client, store and lease. */
export interface Contender {
  redis: Redis[];
  ddb: DynamoDBClient;
  store: DynamoLineageStore;
  lease: SessionLease;
  close(): Promise<void>;
}

export async function createContender(): Promise<Contender> {
  const redis = createRedisClients(process.env.REDIS_URLS!.split(','));
  await waitForRedis(redis);
  const ddb = createDynamoClient({ endpoint: process.env.DYNAMODB_ENDPOINT, maxAttempts: 3 });
  const store = new DynamoLineageStore({ client: ddb, tableName: process.env.TABLE_NAME! });
  const lease = new SessionLease({ clients: redis });
  return {
    redis,
    ddb,
    store,
    lease,
    async close() {
      for (const r of redis) r.disconnect();
      ddb.destroy();
    },
  };
}

/**
 * `n` contenders opened (in parallel) in beforeAll and closed in afterAll of the calling suite or file.
 * They are filled in place, so the caller can hold them from its definition on and use them in tests.
 */
export function contendersForSuite(n: number): Contender[] {
  const contenders = Array.from({ length: n }, () => ({}) as Contender);
  beforeAll(async () => {
    const opened = await Promise.all(contenders.map(() => createContender()));
    opened.forEach((o, i) => Object.assign(contenders[i]!, o));
  });
  afterAll(async () => {
    await Promise.all(contenders.map((c) => c.close()));
  });
  return contenders;
}

/** One contender for the calling suite or file (see contendersForSuite). */
export function contenderForSuite(): Contender {
  return contendersForSuite(1)[0]!;
}

/** Attempt deps on `c`'s lease and store: the default test engine and a 10 s lease unless `extra` says otherwise. */
export function depsOn(c: Contender, extra: Partial<CompactionDeps> = {}): CompactionDeps {
  return { lease: c.lease, store: c.store, engine: testEngine(), leaseTtlMs: 10_000, ...extra };
}

export function userTurns(n: number, prefix = 'm'): Item[] {
  return Array.from({ length: n }, (_, i) => ({ role: 'user', content: `${prefix}${i}` }));
}

/** A new session (fresh tenant) holding `items`. */
export async function seedSession(
  store: DynamoLineageStore,
  items: readonly Item[] = userTurns(20),
  format: ItemFormat = 'chat',
): Promise<SessionRef> {
  const r = await store.createSession({ tenantId: `t-${randomUUID()}`, source: 'test', format });
  if (r.replayed) throw new Error('unexpected replay');
  const ref = { tenantId: r.session.tenantId, sessionId: r.session.sessionId };
  for (let i = 0; i < items.length; i += 98) await store.appendItems(ref, { prepare: asIs(items.slice(i, i + 98)) });
  return ref;
}

/** Appends as an agent would while a compaction runs. */
export function appendTo(store: DynamoLineageStore, ref: SessionRef, items: readonly Item[]) {
  return store.appendItems(ref, { prepare: asIs(items) });
}

export const SUMMARY: Item[] = [
  { role: 'user', content: `${SUMMARY_PREFIX} summary` },
  { role: 'user', content: 'tail' },
];

export interface TestEngine extends CompressionEngine {
  readonly calls: { items: readonly Item[]; format: ItemFormat; options: CompressOptions }[];
}

/**
 * A CompressionEngine whose behaviour is the given function; records every call.
 * Default: returns the seed's summary (prefix summary + "tail").
 */
export function testEngine(
  behaviour: (items: readonly Item[], options: CompressOptions) => Promise<CompressResult> | CompressResult = () => ({
    items: structuredClone(SUMMARY),
  }),
  acceptedOptions: readonly CompressOptionName[] = ['keepLast', 'targetTokens', 'signal', 'deadline'],
): TestEngine {
  const calls: TestEngine['calls'] = [];
  return {
    name: 'test-engine',
    acceptedOptions,
    calls,
    async compress(transcript: Transcript, options) {
      calls.push({ items: transcript.items, format: transcript.format, options });
      return behaviour(transcript.items, options);
    },
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Polls `cond` every 10 ms; throws after `timeoutMs` (a generous bound, not a timing assertion). */
export async function waitFor(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await cond()) return;
    await sleep(10);
  }
  throw new Error(`timed out waiting for ${what}`);
}

export interface SessionSnapshot {
  session: SessionRecord | null;
  children: SessionRecord[];
  items: Item[];
}

/** What a session looks like in the store, minus the fields that may change without a write to its lineage. */
export async function snapshot(store: DynamoLineageStore, ref: SessionRef): Promise<SessionSnapshot> {
  const [session, children, items] = await Promise.all([store.getSession(ref), store.children(ref), store.readAll(ref)]);
  return { session, children, items };
}

/** The parts of a session record a compaction would change (C7: "untouched"). */
export function lineageFields(s: SessionRecord | null): Partial<SessionRecord> | null {
  if (!s) return null;
  return {
    sessionId: s.sessionId,
    childSessionId: s.childSessionId,
    endedAt: s.endedAt,
    endReason: s.endReason,
    generation: s.generation,
    messageCount: s.messageCount,
    lastSeq: s.lastSeq,
  };
}

/**
 * `target` with some methods replaced; every other method is bound to the real object, so
 * private state keeps working. For faults the real Redis/DynamoDB cannot produce on demand.
 */
export function withOverrides<T extends object>(target: T, overrides: Partial<T>): T {
  return new Proxy(target, {
    get(t, prop) {
      if (Object.prototype.hasOwnProperty.call(overrides, prop)) return (overrides as Record<PropertyKey, unknown>)[prop];
      const v = Reflect.get(t, prop, t) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
}

/** A refresher factory that wraps the real LeaseRefresher and counts refreshes and stops. */
export function recordingRefreshers(): {
  factory: RefresherFactory;
  made: { refresher: LeaseRefresher; refreshes: number; stops: number }[];
} {
  const made: { refresher: LeaseRefresher; refreshes: number; stops: number }[] = [];
  const factory: RefresherFactory = (opts) => {
    const entry = { refresher: undefined as unknown as LeaseRefresher, refreshes: 0, stops: 0 };
    entry.refresher = new LeaseRefresher({
      ...opts,
      refresh: () => {
        entry.refreshes++;
        return opts.refresh();
      },
    });
    made.push(entry);
    return {
      start: () => entry.refresher.start(),
      stop: () => {
        entry.stops++;
        return entry.refresher.stop();
      },
      get signal() {
        return entry.refresher.signal;
      },
    };
  };
  return { factory, made };
}

/** Proves a refresher is stopped: no refresh happens across several of its intervals. */
export async function expectNoFurtherRefreshes(entry: { refreshes: number; refresher: LeaseRefresher }): Promise<boolean> {
  const before = entry.refreshes;
  await sleep(entry.refresher.intervalMs * 4 + 20);
  return entry.refreshes === before;
}

export function leaseKeyOf(ref: SessionRef): string {
  return `${DEFAULT_LEASE_KEY_PREFIX}${sessionKey(ref)}`;
}

/** The live items of a compressed outcome; fails the test on any other outcome. */
export function compressedItems(o: CompactionOutcome): Item[] {
  if (o.outcome !== 'compressed') throw new Error(`expected compressed, got ${o.outcome}${'reason' in o ? `/${o.reason}` : ''}`);
  return o.items;
}
