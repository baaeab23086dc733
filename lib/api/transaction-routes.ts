// History transactions (SPEC X1): the Agents SDK's applyHistoryTransaction over HTTP, on a
// conversation's live session (K2) or on one session. The operation id is an Idempotency-Key of
// its own kind: recorded in the same write as the change, scoped like the route's keys (the
// conversation's incarnation, so a retry after a rotation finds its first try and a deleted and
// re-created conversation starts afresh; or the session), and compared by the transaction's
// canonical JSON (A3: the same transaction replays, another one is 422 idempotency_key_reused).
import * as z from 'zod/mini';
import { describeProblem, validateItems } from '../items/validate.js';
import type { Item, ItemFormat } from '../items/types.js';
import { withEstimates } from '../lineage/prepare.js';
import type { ConversationScope, IdempotencyInput, SessionRecord, StoredResponse } from '../lineage/types.js';
import type { SessionRef } from '../session-ref.js';
import { requestDigest } from '../items/canonical-json.js';
import { onLive } from './conversation-routes.js';
import { HttpError } from './errors.js';
import { optional, publishTurn, replayed, type Acted, type Route, type RouteContext } from './routes.js';
import { parseWith } from './schemas.js';
import { turnTokenOf } from './turn-routes.js';
import { sessionView } from './views.js';

/** Operation ids: what the SDK's runner makes (UUID-like), printable ASCII, not blank. */
const OPERATION_ID = /^(?=.*[^ ])[\x20-\x7e]{1,255}$/;

const items = z.array(z.unknown());

export const transactionBody = z.strictObject({
  operationId: z.string().check(z.regex(OPERATION_ID, 'must be 1-255 printable ASCII characters, not all spaces')),
  transaction: z.discriminatedUnion('type', [
    z.strictObject({ type: z.literal('append_items'), items }),
    z.strictObject({ type: z.literal('replace_suffix'), expectedSuffix: items, replacement: items }),
  ]),
});

export type TransactionBody = z.infer<typeof transactionBody>;

/** The key an operation id is recorded under: its own namespace beside the routes' Idempotency-Keys. */
export function operationKey(operationId: string): string {
  return `history-transaction:${operationId}`;
}

/** A1 for a transaction's item lists: 400 naming `transaction.<list>[i]`, before anything is written. */
function checked(format: ItemFormat, list: unknown[], field: string): Item[] {
  const r = validateItems(format, list);
  if (r.ok) return r.items;
  const where = `transaction.${field}[${r.problem.index}]${r.problem.path ? `.${r.problem.path}` : ''}`;
  throw new HttpError(400, 'invalid_request', describeProblem(r.problem, `transaction.${field}`), { field: where });
}

function answer(session: SessionRecord, removed: number, appended: number): StoredResponse {
  return { status: 200, body: { session: sessionView(session), removed, appended } };
}

/** POST .../transactions on `ref`; `scope` puts the operation id under a conversation (K2). */
export async function applyTransaction(ctx: RouteContext, ref: SessionRef, scope?: ConversationScope): Promise<Acted> {
  const body = parseWith(transactionBody, ctx.body, 'body');
  const t = body.transaction;
  const turn = turnTokenOf(ctx);
  const idempotency: IdempotencyInput = {
    key: operationKey(body.operationId),
    requestHash: requestDigest(t),
    ...optional('conversation', scope),
  };
  if (t.type === 'append_items' && t.items.length > 0) {
    const r = await ctx.deps.store.appendItems(ref, {
      prepare: (session) => withEstimates(checked(session.format, t.items, 'items'), session),
      idempotency,
      respond: (s, n) => answer(s, 0, n),
      ...optional('turn', turn),
    });
    if (r.replayed) return { result: replayed(r.response) };
    await publishTurn(ctx, r.session);
    return { result: { status: 200, body: answer(r.session, 0, r.appended).body }, session: r.session };
  }
  const r = await ctx.deps.store.replaceSuffix(ref, {
    prepare: (session) =>
      t.type === 'append_items'
        ? { expectedSuffix: [], replacement: withEstimates([], session) }
        : {
            expectedSuffix: checked(session.format, t.expectedSuffix, 'expectedSuffix'),
            replacement: withEstimates(checked(session.format, t.replacement, 'replacement'), session),
          },
    idempotency,
    respond: answer,
    ...optional('turn', turn),
  });
  if (r.replayed) return { result: replayed(r.response) };
  if (r.appended > 0) await publishTurn(ctx, r.session);
  return { result: { status: 200, body: r.response.body }, session: r.session };
}

export const transactionRoutes: readonly Route[] = [
  {
    method: 'POST',
    path: '/sessions/{id}/transactions',
    async handle(ctx) {
      return (await applyTransaction(ctx, { tenantId: ctx.tenantId, sessionId: ctx.params.id! })).result;
    },
  },
  {
    method: 'POST',
    path: '/conversations/{conversationId}/transactions',
    async handle(ctx) {
      const conversationId = ctx.params.conversationId!;
      return (await onLive(ctx, (ref, tip) => applyTransaction(ctx, ref, { conversationId, rootSessionId: tip.rootSessionId }))).result;
    },
  },
];
