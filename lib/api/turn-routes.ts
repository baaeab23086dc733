// The turn routes (SPEC T1-T6): begin, heartbeat, end and status of a conversation's turn. They act
// on the conversation's live session (conversation-routes.ts onLive follows a rotation), where the
// turn lives. The token is answered by the begin only and read from the Turn-Token header.
import * as z from 'zod/mini';
import { ConversationBusyError, TurnTokenInvalidError } from '../lineage/turn-errors.js';
import type { TurnCredential } from '../lineage/types.js';
import { credentialOf } from '../lineage/turn-token.js';
import { HttpError } from './errors.js';
import { onLive } from './conversation-routes.js';
import type { Route, RouteContext } from './routes.js';
import { parseWith } from './schemas.js';

export const TURN_TTL = { min: 5_000, max: 900_000, default: 300_000 } as const;
export const TURN_WAIT = { min: 0, max: 25_000, default: 20_000 } as const;

const beginTurnBody = z.strictObject({
  strategy: z.optional(z.enum(['reject', 'enqueue', 'interrupt', 'rollback'])),
  ttlMs: z.optional(z.number().check(z.int(), z.minimum(TURN_TTL.min), z.maximum(TURN_TTL.max))),
  waitMs: z.optional(z.number().check(z.int(), z.minimum(TURN_WAIT.min), z.maximum(TURN_WAIT.max))),
});

const heartbeatBody = z.strictObject({
  ttlMs: z.optional(z.number().check(z.int(), z.minimum(TURN_TTL.min), z.maximum(TURN_TTL.max))),
});

/** The Turn-Token header of a write, if any (a malformed one is refused: nothing lands). */
export function turnTokenOf(ctx: RouteContext): TurnCredential | undefined {
  const header = ctx.headers['turn-token'];
  if (header === undefined || header === '') return undefined;
  const cred = credentialOf(header);
  if (!cred) throw new TurnTokenInvalidError();
  return cred;
}

/** The token of a heartbeat or end: required, and it must name the turn in the path. */
function tokenFor(ctx: RouteContext): TurnCredential {
  const cred = turnTokenOf(ctx);
  if (!cred) throw new HttpError(400, 'invalid_request', 'the Turn-Token header is required', { field: 'Turn-Token' });
  if (cred.turnId !== ctx.params.turnId) throw new TurnTokenInvalidError();
  return cred;
}

/** 409 conversation_busy with Retry-After: when the active turn expires at the latest (1 s while only waiters are ahead). */
function busyAnswer(err: ConversationBusyError): HttpError {
  const left = err.activeTurn ? Date.parse(err.activeTurn.expiresAt) - Date.now() : 1000;
  const seconds = Math.min(60, Math.max(1, Math.ceil(left / 1000)));
  return new HttpError(409, 'conversation_busy', err.message, { activeTurn: err.activeTurn }, { 'retry-after': String(seconds) });
}

export const turnRoutes: readonly Route[] = [
  {
    method: 'POST',
    path: '/conversations/{conversationId}/turns',
    async handle(ctx) {
      const body = parseWith(beginTurnBody, ctx.body ?? {}, 'body');
      const strategy = body.strategy ?? 'reject';
      try {
        return (
          await onLive(ctx, async (ref) => {
            const turn = await ctx.deps.store.beginTurn(ref, {
              strategy,
              ttlMs: body.ttlMs ?? TURN_TTL.default,
              waitMs: strategy === 'enqueue' ? (body.waitMs ?? TURN_WAIT.default) : 0,
              conversationId: ctx.params.conversationId!,
            });
            return { result: { status: 201, body: { turn } } };
          })
        ).result;
      } catch (err) {
        if (err instanceof ConversationBusyError) throw busyAnswer(err);
        throw err;
      }
    },
  },
  {
    method: 'GET',
    path: '/conversations/{conversationId}/turns/current',
    async handle(ctx) {
      return (await onLive(ctx, async (ref) => ({ result: { status: 200, body: { turn: await ctx.deps.store.currentTurn(ref) } } })))
        .result;
    },
  },
  {
    method: 'POST',
    path: '/conversations/{conversationId}/turns/{turnId}/heartbeat',
    async handle(ctx) {
      const body = parseWith(heartbeatBody, ctx.body ?? {}, 'body');
      const cred = tokenFor(ctx);
      return (
        await onLive(ctx, async (ref) => {
          const turn = await ctx.deps.store.heartbeatTurn(ref, cred, body.ttlMs ?? TURN_TTL.default);
          return { result: { status: 200, body: { turn } } };
        })
      ).result;
    },
  },
  {
    method: 'DELETE',
    path: '/conversations/{conversationId}/turns/{turnId}',
    async handle(ctx) {
      const cred = tokenFor(ctx);
      return (
        await onLive(ctx, async (ref) => {
          await ctx.deps.store.endTurn(ref, cred);
          return { result: { status: 204 } };
        })
      ).result;
    },
  },
];
