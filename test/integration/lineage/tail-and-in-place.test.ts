// Concurrent tail, in-place generations, size limits and tenancy (SPEC I4, C11, F2).
import { randomUUID } from 'node:crypto';
import { DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import {
  MAX_MESSAGE_ITEM_BYTES,
  MessageTooLargeError,
  SessionEndedError,
  SessionExistsError,
  SessionNotFoundError,
} from '../../../lib/lineage/index.js';
import { messageSk } from '../../../lib/lineage/keys.js';
import type { Message } from '../../../lib/messages.js';
import { begin, dynamoClient, makeStore, msg, msgs, newSession, rawItems, tableName } from './support.js';

const client = dynamoClient();
const NOW = Date.UTC(2030, 0, 1);
const store = makeStore(client, { now: () => NOW, archiveRetentionSeconds: 3600 });
afterAll(() => client.destroy());

const summary: Message = { role: 'user', content: '[CONTEXT COMPACTION] summary' };

describe('concurrent tail (I4)', () => {
  it('I4: appends after beginAttempt survive into the rotated child, in order, after the compacted messages', async () => {
    const ref = await newSession(store, msgs(1, 5));
    const begun = await begin(store, ref);
    await store.appendMessages(ref, msgs(6, 7));
    // Appends are never blocked by the in-flight attempt, and keep landing while the commit runs.
    const [out] = await Promise.all([
      store.commitRotation(ref, begun.attempt, [summary]),
      store.appendMessages(ref, [msg(8)]).catch((e: unknown) => e),
    ]);
    const childRef = { tenantId: ref.tenantId, sessionId: out.child.sessionId };
    const childMessages = await store.readMessages(childRef);
    const late = await store.getSession(ref);
    // msg 8 either made it into the tail, or its append was refused naming the child (never silently dropped).
    const tailed = childMessages.some((m) => m.content === 'message 8');
    if (!tailed) {
      await expect(store.appendMessages(ref, [msg(8)])).rejects.toBeInstanceOf(SessionEndedError);
    }
    expect(childMessages).toEqual([summary, ...msgs(6, tailed ? 8 : 7)]);
    expect(out.messages).toEqual(childMessages);
    expect(out.tailCarried).toBe(tailed ? 3 : 2);
    expect(late?.childSessionId).toBe(childRef.sessionId);
  });

  it('I4: appends after beginAttempt survive into the new in-place generation, in order', async () => {
    const ref = await newSession(store, msgs(1, 5));
    const begun = await begin(store, ref);
    await store.appendMessages(ref, msgs(6, 7));
    const out = await store.commitInPlace(ref, begun.attempt, [summary, msg(5)]);
    expect(out.tailCarried).toBe(2);
    expect(await store.readMessages(ref)).toEqual([summary, msg(5), ...msgs(6, 7)]);
    // Appends after the flip continue the new generation.
    await store.appendMessages(ref, [msg(9)]);
    expect(await store.readMessages(ref)).toEqual([summary, msg(5), ...msgs(6, 7), msg(9)]);
  });

  it('I4: appends to a rotated parent are refused with SessionEndedError naming the live child', async () => {
    const ref = await newSession(store);
    const begun = await begin(store, ref);
    await store.commitRotation(ref, begun.attempt, [summary]);
    const err = await store.appendMessages(ref, [msg(99)]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SessionEndedError);
    expect((err as SessionEndedError).liveSessionId).toBe(begun.attempt.pendingChildId);
  });
});

describe('in-place commit (C11)', () => {
  it('C11: flips the generation, archives the old items with expiresAt, readMessages returns compacted + tail', async () => {
    const ref = await newSession(store, msgs(1, 6));
    const before = await store.getSession(ref);
    const begun = await begin(store, ref);
    await store.appendMessages(ref, [msg(7)]);
    const out = await store.commitInPlace(ref, begun.attempt, [summary]);

    expect(out.session.sessionId).toBe(ref.sessionId);
    expect(out.session.generation).toBeGreaterThan(before!.generation);
    expect(out.session.endedAt).toBeUndefined();
    expect(out.session.attempt).toBeUndefined();
    expect(out.session.messageCount).toBe(2);
    expect(await store.readMessages(ref)).toEqual([summary, msg(7)]);

    const items = (await rawItems(client, ref)).filter((i) => String(i.sk).startsWith('MSG#'));
    const old = items.filter((i) => i.generation === before!.generation);
    expect(old).toHaveLength(7);
    for (const i of old) expect(i.expiresAt).toBe(NOW / 1000 + 3600);
    const live = items.filter((i) => i.generation === out.session.generation);
    expect(live).toHaveLength(2);
    for (const i of live) expect(i.expiresAt).toBeUndefined();
  });

  it('C11: TTL is enabled on the table for expiresAt', async () => {
    const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName() }));
    expect(ttl.TimeToLiveDescription?.AttributeName).toBe('expiresAt');
    expect(ttl.TimeToLiveDescription?.TimeToLiveStatus).toMatch(/ENABL/);
  });

  it('C11/L6: an in-place commit with a stale fence is refused and the session is untouched', async () => {
    const ref = await newSession(store, msgs(1, 3));
    const a = await begin(store, ref);
    await begin(store, ref);
    await expect(store.commitInPlace(ref, a.attempt, [summary])).rejects.toThrow(/stale/);
    expect(await store.readMessages(ref)).toEqual(msgs(1, 3));
    const items = (await rawItems(client, ref)).filter((i) => String(i.sk).startsWith('MSG#'));
    expect(items.filter((i) => i.generation === a.attempt.fence)).toEqual([]);
    expect(items).toHaveLength(3);
  });
});

describe('sizes', () => {
  it('a transcript over 400 KB round-trips intact (many items)', async () => {
    const big = Array.from({ length: 12 }, (_, i): Message => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `${i}:` + 'x'.repeat(50_000) + 'é',
      tool_call_id: `call-${i}`,
    }));
    const ref = await newSession(store, big);
    expect(await store.readMessages(ref)).toEqual(big);
    const begun = await begin(store, ref);
    expect(begun.messages).toEqual(big);
    const out = await store.commitRotation(ref, begun.attempt, big.slice(6));
    expect(await store.readMessages({ tenantId: ref.tenantId, sessionId: out.child.sessionId })).toEqual(big.slice(6));
  });

  it('one message over the item limit -> MessageTooLargeError, nothing written (never truncated)', async () => {
    const ref = await newSession(store, []);
    const tooBig: Message = { role: 'user', content: 'y'.repeat(MAX_MESSAGE_ITEM_BYTES) };
    const err = await store.appendMessages(ref, [msg(1), tooBig, msg(3)]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MessageTooLargeError);
    expect((err as MessageTooLargeError).index).toBe(1);
    expect(await store.readMessages(ref)).toEqual([]);
    expect((await rawItems(client, ref)).filter((i) => String(i.sk).startsWith('MSG#'))).toEqual([]);
    expect((await store.getSession(ref))?.lastSeq).toBe(0);
  });

  it('appends of more than 100 messages are chunked into several transactions, in order', async () => {
    const ref = await newSession(store, msgs(1, 250));
    expect(await store.readMessages(ref)).toEqual(msgs(1, 250));
    expect((await rawItems(client, ref)).some((i) => i.sk === messageSk(0, 250))).toBe(true);
  });
});

describe('sessions and tenancy', () => {
  it('F2: the same sessionId under two tenants is two different sessions', async () => {
    const sessionId = `shared-${randomUUID()}`;
    const a = { tenantId: `ta-${randomUUID()}`, sessionId };
    const b = { tenantId: `tb-${randomUUID()}`, sessionId };
    await store.createSession(a);
    await store.createSession(b);
    await store.appendMessages(a, [msg(1)]);
    await store.appendMessages(b, [msg(2), msg(3)]);
    expect(await store.readMessages(a)).toEqual([msg(1)]);
    expect(await store.readMessages(b)).toEqual([msg(2), msg(3)]);
    expect(await store.getSession({ tenantId: `tc-${randomUUID()}`, sessionId })).toBeNull();
  });

  it('createSession refuses a taken id; unknown sessions are SessionNotFoundError', async () => {
    const ref = await newSession(store, []);
    await expect(store.createSession(ref)).rejects.toBeInstanceOf(SessionExistsError);
    const missing = { tenantId: ref.tenantId, sessionId: randomUUID() };
    await expect(store.appendMessages(missing, [msg(1)])).rejects.toBeInstanceOf(SessionNotFoundError);
    await expect(store.readMessages(missing)).rejects.toBeInstanceOf(SessionNotFoundError);
    await expect(begin(store, missing)).rejects.toBeInstanceOf(SessionNotFoundError);
  });

  it('C5: touchActivity records the mark without bumping the version a commit checks', async () => {
    const ref = await newSession(store);
    const begun = await begin(store, ref);
    await store.touchActivity(ref, 'compaction in progress');
    expect((await store.getSession(ref))?.lastActivity).toEqual({ label: 'compaction in progress', at: new Date(NOW).toISOString() });
    await store.commitRotation(ref, begun.attempt, [summary]);
    await store.touchActivity({ tenantId: ref.tenantId, sessionId: randomUUID() }, 'missing is fine');
  });
});
