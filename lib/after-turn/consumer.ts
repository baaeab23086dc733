// One SQS batch of after-turn events: parse, decide whether compaction is due, compact at most
// once per messageId, and say which records failed (ReportBatchItemFailures). No AWS event types.
import { IdempotencyAlreadyInProgressError } from '@aws-lambda-powertools/idempotency';
import { silentLogger, type Logger } from '../logger.js';
import { asError, errorFields, ServiceError } from '../errors.js';
import { InvalidAfterTurnEventError } from './errors.js';
import { parseAfterTurnBody } from './event.js';
import { checkDue, compactDue, type AfterTurnDeps, type AfterTurnResult } from './handle-after-turn.js';
import { idempotentPerMessage, type PersistenceFor, type RemainingTime } from './idempotency.js';
import type { QueueMessage } from './local-invoke.js';
import type { AfterTurnEvent } from './publisher.js';
import type { SessionRecord } from '../lineage/types.js';

export interface AfterTurnConsumerDeps extends AfterTurnDeps {
  persistence: PersistenceFor;
  idempotencyTtlSeconds: number;
  logger?: Logger;
  /** Records not started when less time than this remains; they are redelivered. Default 10 s. */
  minRemainingMsToStart?: number;
}

export interface Invocation extends RemainingTime {
  functionName: string;
  awsRequestId: string;
}

export type RecordReport =
  | { messageId: string; ok: true; result: AfterTurnResult; replayed: boolean }
  | { messageId: string; ok: false; error: string; retryable: boolean };

export interface BatchReport {
  failedMessageIds: string[];
  records: RecordReport[];
}

type Payload = { messageId: string; event: AfterTurnEvent; holder: string; session: SessionRecord };

export class AfterTurnConsumer {
  constructor(private readonly deps: AfterTurnConsumerDeps) {}

  async processBatch(messages: readonly QueueMessage[], inv: Invocation): Promise<BatchReport> {
    const log = this.deps.logger ?? silentLogger;
    const ran = new Set<string>();
    const run = idempotentPerMessage(
      async (p: Payload) => {
        ran.add(p.messageId);
        return compactDue(
          this.deps,
          { event: p.event, holder: p.holder, remainingTimeMs: () => inv.getRemainingTimeInMillis() },
          p.session,
        );
      },
      this.deps.persistence,
      { ttlSeconds: this.deps.idempotencyTtlSeconds, invocation: inv },
    );

    const records: RecordReport[] = [];
    // One record at a time: records of one session must not contend with each other.
    for (const m of messages) {
      if (inv.getRemainingTimeInMillis() < (this.deps.minRemainingMsToStart ?? 10_000)) {
        records.push({ messageId: m.messageId, ok: false, error: 'not started: invocation nearly out of time', retryable: true });
        continue;
      }
      try {
        const event = parseAfterTurnBody(m.body);
        // Nothing is written unless compaction is due: a review fork (C13) or a session under the
        // threshold costs one read at most, and no idempotency record.
        const due = await checkDue(this.deps, event);
        const result = due.due
          ? await run({
              messageId: m.messageId,
              event,
              holder: `${inv.functionName}:${inv.awsRequestId}:${m.messageId}`,
              session: due.session,
            })
          : due.result;
        const replayed = due.due && !ran.has(m.messageId);
        log.info('after-turn record handled', { messageId: m.messageId, ...event, result, replayed });
        records.push({ messageId: m.messageId, ok: true, result, replayed });
      } catch (err) {
        records.push(this.failure(m.messageId, err, log));
      }
    }
    return { failedMessageIds: records.filter((r) => !r.ok).map((r) => r.messageId), records };
  }

  private failure(messageId: string, err: unknown, log: Logger): RecordReport {
    const e = asError(err);
    const retryable =
      (err instanceof ServiceError && err.retryable) ||
      // Another delivery of this messageId is running; this copy is retried after it.
      err instanceof IdempotencyAlreadyInProgressError;
    if (err instanceof InvalidAfterTurnEventError) {
      log.error('after-turn body rejected; reported failed so it dead-letters after maxReceiveCount', { messageId, error: e.message });
    } else if (retryable) {
      log.warn('after-turn record will be retried', { messageId, error: e.message, errorName: e.name });
    } else {
      log.error('after-turn record failed', { messageId, error: errorFields(err) });
    }
    return { messageId, ok: false, error: `${e.name}: ${e.message}`, retryable };
  }
}
