// Typed refusals of conversation turns (SPEC T1-T6), each a ServiceError carrying its answer.
import { LineageError } from './errors.js';
import type { TurnView } from './types.js';

/** T1/T2: another turn is current; `activeTurn` names it (never its token). */
export class ConversationBusyError extends LineageError {
  override readonly name = 'ConversationBusyError';
  constructor(
    readonly conversationId: string,
    readonly activeTurn: TurnView | null,
  ) {
    super(`conversation ${conversationId} is busy: another turn is active`, {
      status: 409,
      code: 'conversation_busy',
      details: { activeTurn },
    });
  }
}

export type TurnRefusal = 'turn_superseded' | 'turn_expired' | 'turn_ended';

const MESSAGES: Record<TurnRefusal, string> = {
  turn_superseded: 'another turn superseded this one',
  turn_expired: 'the turn expired',
  turn_ended: 'the turn has ended',
};

/** T3/T6: the write's turn is not the current one (superseded, ended or expired): nothing landed. */
export class TurnNotCurrentError extends LineageError {
  override readonly name = 'TurnNotCurrentError';
  constructor(
    readonly turnId: string,
    readonly reason: TurnRefusal,
  ) {
    super(`turn ${turnId}: ${MESSAGES[reason]}`, { status: 409, code: reason, details: { turnId } });
  }
}

/** T3: the token does not belong to the turn it names (nothing changed). */
export class TurnTokenInvalidError extends LineageError {
  override readonly name = 'TurnTokenInvalidError';
  constructor() {
    super('the Turn-Token is not valid for this conversation', { status: 403, code: 'turn_token_invalid' });
  }
}

/** T5: the conversation requires turns and the write carried no token. */
export class TurnRequiredError extends LineageError {
  override readonly name = 'TurnRequiredError';
  constructor(readonly conversationId: string) {
    super(`conversation ${conversationId} requires a turn: send the Turn-Token of a current turn`, { status: 409, code: 'turn_required' });
  }
}

/** T2: a rollback would remove items a compaction already summarized; nothing changed (interrupt instead). */
export class RollbackUnavailableError extends LineageError {
  override readonly name = 'RollbackUnavailableError';
  constructor(
    readonly conversationId: string,
    why = 'a compaction summarized items of the active turn (or it replaced items from before it)',
  ) {
    super(`conversation ${conversationId}: ${why}; it cannot be rolled back (interrupt it instead)`, {
      status: 409,
      code: 'rollback_unavailable',
    });
  }
}
