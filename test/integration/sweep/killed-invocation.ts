// A compaction invocation that dies mid-commit: it begins an attempt, writes the pending
// child's messages, and the process is killed as the rotation transaction goes out.
// Every command from then on fails, as if the process were gone (no cleanup runs).
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { createDynamoClient } from '../../../lib/clients.js';
import { DynamoLineageStore } from '../../../lib/lineage/dynamo-lineage-store.js';
import { sessionPk } from '../../../lib/lineage/keys.js';
import type { AttemptRecord } from '../../../lib/lineage/types.js';
import type { Message } from '../../../lib/messages.js';
import { sessionKey, type SessionRef } from '../../../lib/session-ref.js';

export interface KilledInvocation {
  attempt: AttemptRecord;
  /** Messages the dead commit left under its pending child. */
  orphanMessages: number;
}

export function transcript(n: number, words = 40): Message[] {
  return Array.from({ length: n }, (_, i) => ({
    role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
    content: Array.from({ length: words }, (_, w) => `turn${i} word${w} lorem${(i * 31 + w * 7) % 97}`).join(' '),
  }));
}

export async function killedRotation(
  opts: { endpoint: string; tableName: string; ref: SessionRef; leaseExpiresAt: number },
  compacted: readonly Message[] = transcript(3, 5),
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
  const store = new DynamoLineageStore({ client: ddb, tableName: opts.tableName });
  try {
    const fence = await store.nextFence(sessionKey(opts.ref));
    const begun = await store.beginAttempt(opts.ref, { holder: `killed-${randomUUID()}`, fence, leaseExpiresAt: opts.leaseExpiresAt });
    const died = await store.commitRotation(opts.ref, begun.attempt, compacted).then(
      () => false,
      (err: unknown) => err instanceof Error && /killed/.test(err.message),
    );
    if (!died) throw new Error('the commit was expected to die');
    return { attempt: begun.attempt, orphanMessages: compacted.length };
  } finally {
    ddb.destroy();
  }
}

/** Number of message items stored under a session id (whether or not its META exists). */
export async function messageItemCount(client: DynamoDBClient, tableName: string, ref: SessionRef): Promise<number> {
  const doc = DynamoDBDocumentClient.from(client);
  const out = await doc.send(
    new QueryCommand({
      TableName: tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :msg)',
      ExpressionAttributeValues: { ':pk': sessionPk(ref), ':msg': 'MSG#' },
      Select: 'COUNT',
    }),
  );
  return out.Count ?? 0;
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
        generation: 0,
        messageCount: 0,
        lastSeq: 0,
      },
    }),
  );
  return childId;
}
