// A compaction invocation that dies mid-commit: it begins an attempt, writes the pending
// child's items (too many for one transaction, so they go first), and the process is killed as
// the rotation transaction goes out.
// Every command from then on fails, as if the process were gone (no cleanup runs).
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { createDynamoClient } from '../../../lib/aws-clients.js';
import type { Item } from '../../../lib/items/types.js';
import { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import { rotationShardOf, sessionPk } from '../../../lib/lineage/dynamo/keys.js';
import type { AttemptRecord } from '../../../lib/lineage/types.js';
import type { SessionRef } from '../../../lib/session-ref.js';

export interface KilledInvocation {
  attempt: AttemptRecord;
  /** Messages the dead commit left under its pending child. */
  orphanMessages: number;
}

export function transcript(n: number, words = 40): Item[] {
  return Array.from({ length: n }, (_, i) => ({
    role: i % 2 === 0 ? 'user' : 'assistant',
    content: Array.from({ length: words }, (_, w) => `turn${i} word${w} lorem${(i * 31 + w * 7) % 97}`).join(' '),
  }));
}

/** `n` items of 200 KB: one stored row each, more than the killed store's transactions carry. */
export function bulkyTranscript(n: number): Item[] {
  return Array.from({ length: n }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: `turn${i} ${'w'.repeat(200_000)}` }));
}

export async function killedRotation(
  opts: { endpoint: string; tableName: string; ref: SessionRef; leaseExpiresAt: number },
  compacted: readonly Item[] = bulkyTranscript(3),
): Promise<KilledInvocation> {
  const ddb = createDynamoClient({ endpoint: opts.endpoint });
  let dead = false;
  ddb.middlewareStack.add(
    (next, context) => async (args) => {
      if (dead || context.commandName === 'TransactWriteItemsCommand') {
        dead = true;
        throw new Error('invocation killed');
      }
      return next(args);
    },
    { step: 'initialize', name: 'killSwitch' },
  );
  // Transactions of at most 100 KB: the commit writes the child's rows first, as a 4 MB one would.
  const store = new DynamoLineageStore({ client: ddb, tableName: opts.tableName, transactionBytes: 100_000 });
  try {
    const begun = await store.beginAttempt(opts.ref, {
      holder: `killed-${randomUUID()}`,
      leaseExpiresAt: opts.leaseExpiresAt,
      activityLabel: 'compaction started',
    });
    const input = { compacted, tokenEstimates: compacted.map(() => 1), activityLabel: 'compaction completed' };
    const died = await store.commitRotation(opts.ref, begun, input).then(
      () => false,
      (err: unknown) => err instanceof Error && /killed/.test(err.message),
    );
    if (!died) throw new Error('the commit was expected to die');
    // One stored row per item of bulkyTranscript (each is near a row's size).
    return { attempt: begun.attempt, orphanMessages: compacted.length };
  } finally {
    ddb.destroy();
  }
}

/** Number of items stored under a session id (whether or not its META exists): packed rows expanded, parts left out. */
export async function messageItemCount(client: DynamoDBClient, tableName: string, ref: SessionRef): Promise<number> {
  const doc = DynamoDBDocumentClient.from(client);
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const out = await doc.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :msg)',
        ExpressionAttributeValues: { ':pk': sessionPk(ref), ':msg': 'MSG#' },
        ProjectionExpression: 'sk, idx, body',
        ExclusiveStartKey: start,
      }),
    );
    for (const row of out.Items ?? []) {
      if (String(row.sk).split('#').length > 3) continue; // an inline part
      if (String(row.sk).endsWith('#!')) continue; // H1: a replaced generation's marker, not an item
      count += typeof row.body === 'string' ? 1 : String(row.idx).split(',').length;
    }
    start = out.LastEvaluatedKey;
  } while (start);
  return count;
}

/** Writes a second child for a parent with raw PutItems: the fork SPEC I1 forbids, for the sweep to find. */
export async function forgeChild(client: DynamoDBClient, tableName: string, parent: SessionRef): Promise<string> {
  const doc = DynamoDBDocumentClient.from(client);
  const childId = `forged-${randomUUID()}`;
  await doc.send(
    new PutCommand({
      TableName: tableName,
      Item: {
        pk: sessionPk({ tenantId: parent.tenantId, sessionId: childId }),
        sk: 'META',
        tenantId: parent.tenantId,
        sessionId: childId,
        createdAt: new Date().toISOString(),
        parentSessionId: parent.sessionId,
        parentKey: sessionPk(parent),
        rotationShard: rotationShardOf(sessionPk({ tenantId: parent.tenantId, sessionId: childId }), 16),
        generation: 0,
        messageCount: 0,
        lastSeq: 0,
      },
    }),
  );
  return childId;
}
