// Checks of the SPEC invariants against the real store and lease, shared by the chaos files.
import { QueryCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LeaseApi } from '../../../lib/lease/index.js';
import type { LineageStore, SessionRecord } from '../../../lib/lineage/types.js';
import { sessionPk } from '../../../lib/lineage/dynamo/keys.js';
import { sessionKey, type SessionRef } from '../../../lib/session-ref.js';
import { sleep } from '../../fixtures/engines.js';

/** I1: number of children beyond the first (0 unless the transcript forked). */
export async function extraChildren(store: LineageStore, ref: SessionRef): Promise<number> {
  return Math.max(0, (await store.children(ref)).length - 1);
}

/** I3: polls until nobody holds the session's lease (a crashed holder's lease expires by TTL). */
export async function waitLeaseFree(lease: LeaseApi, ref: SessionRef, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if ((await lease.holderOf(sessionKey(ref))) === null) return true;
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
}

/** Every item stored under a session id (META and messages), read straight from the table. */
export async function itemsUnder(ddb: DynamoDBClient, tableName: string, ref: SessionRef): Promise<string[]> {
  const out = await ddb.send(
    new QueryCommand({
      TableName: tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': { S: sessionPk(ref) } },
      ProjectionExpression: 'sk',
      ConsistentRead: true,
    }),
  );
  return (out.Items ?? []).map((i) => i.sk?.S ?? '?');
}

/** Message items of generations newer than the session's active one (a crashed in-place commit). */
export async function strayGenerations(ddb: DynamoDBClient, tableName: string, session: SessionRecord): Promise<string[]> {
  const sks = await itemsUnder(ddb, tableName, session);
  return sks.filter((sk) => {
    const m = /^MSG#(\d+)#/.exec(sk);
    return m !== null && Number(m[1]) > session.generation;
  });
}

/** The live tip of a session's lineage. */
export async function liveTip(store: LineageStore, ref: SessionRef): Promise<SessionRecord> {
  const chain = await store.lineage(ref);
  const tip = chain.find((s) => !s.endedAt) ?? chain[chain.length - 1];
  if (!tip) throw new Error(`no lineage for ${ref.sessionId}`);
  return tip;
}
