// Deployed publisher: one PutEvents entry per commit on the configured bus.
import { silentLogger, type Logger } from '../logger.js';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { currentTraceHeader } from '../config.js';
import {
  checkEvent,
  EVENT_DETAIL_TYPE,
  EVENT_SOURCE,
  eventIds,
  type CompactionEventPublisher,
  type PublishResult,
  type SessionCompacted,
} from './session-compacted.js';

export interface EventBridgePublisherOptions {
  busName: string;
  client?: EventBridgeClient;
  region?: string | undefined;
  /** Upper bound on the time a commit path waits for EventBridge (default 2 s). */
  timeoutMs?: number;
  /** Where a failed publish is reported (the runtime's logger; silent when unset). */
  logger?: Logger;
  /** X-Ray trace header to carry into the event (Lambda sets _X_AMZN_TRACE_ID). */
  traceHeader?: () => string | undefined;
}

export class EventBridgeCompactionEventPublisher implements CompactionEventPublisher {
  private readonly client: EventBridgeClient;
  private readonly timeoutMs: number;
  private readonly logger: Logger;
  private readonly traceHeader: () => string | undefined;

  constructor(private readonly opts: EventBridgePublisherOptions) {
    // Two attempts: a retry covers a dropped connection; more would hold the caller's commit path.
    this.client = opts.client ?? new EventBridgeClient({ ...(opts.region ? { region: opts.region } : {}), maxAttempts: 2 });
    this.timeoutMs = opts.timeoutMs ?? 2000;
    this.logger = opts.logger ?? silentLogger;
    this.traceHeader = opts.traceHeader ?? (() => currentTraceHeader());
  }

  async publish(e: SessionCompacted): Promise<PublishResult> {
    const checked = checkEvent(e);
    if (!checked.ok) return this.failed(e, checked.error);
    const trace = this.traceHeader();
    const abort = new AbortController();
    // The SDK honours abortSignal only inside its HTTP handler; the race also bounds credential
    // resolution or any middleware that hangs.
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abort.abort();
        reject(new Error(`PutEvents timed out after ${this.timeoutMs} ms`));
      }, this.timeoutMs);
    });
    try {
      const sent = this.client.send(
        new PutEventsCommand({
          Entries: [
            {
              EventBusName: this.opts.busName,
              Source: EVENT_SOURCE,
              DetailType: EVENT_DETAIL_TYPE,
              Detail: JSON.stringify(checked.event),
              Time: new Date(checked.event.at),
              ...(trace ? { TraceHeader: trace } : {}),
            },
          ],
        }),
        { abortSignal: abort.signal },
      );
      sent.catch(() => undefined); // after a timeout its rejection has no listener left
      const out = await Promise.race([sent, timedOut]);
      // PutEvents answers 200 even when an entry was refused; the entry carries the error.
      const entry = out.Entries?.[0];
      if ((out.FailedEntryCount ?? 0) > 0 || entry?.ErrorCode) {
        return this.failed(e, `PutEvents refused the entry: ${entry?.ErrorCode ?? 'unknown'} ${entry?.ErrorMessage ?? ''}`.trim());
      }
      return { published: true };
    } catch (err) {
      return this.failed(e, err instanceof Error ? `${err.name}: ${err.message}` : String(err));
    } finally {
      clearTimeout(timer);
    }
  }

  private failed(e: SessionCompacted, error: string): PublishResult {
    try {
      this.logger.warn('SessionCompacted event not published', { ...eventIds(e), busName: this.opts.busName, error });
    } catch {
      // A failing log sink must not turn into an exception on the commit path either.
    }
    return { published: false, error };
  }
}
