// Picks the publisher from the parsed config (lib/config.ts; the contract serverless.yml honours):
//   eventBusName     (EVENT_BUS_NAME)    deployed stages: EventBridge bus name
//   localEventsFile  (LOCAL_EVENTS_FILE) local stage: JSON-lines file the local stand-in appends to
//   neither                               in-memory only (in-process tests)
import { LocalCompactionEventPublisher } from './local-publisher.js';
import type { Logger } from '../logger.js';
import type { CompactionEventPublisher, PublishResult, SessionCompacted } from './session-compacted.js';

export interface EventsConfig {
  eventBusName?: string | undefined;
  localEventsFile?: string | undefined;
  region?: string | undefined;
}

export function compactionEventPublisherFrom(config: EventsConfig, logger?: Logger): CompactionEventPublisher {
  if (config.eventBusName) return new LazyEventBridgePublisher(config.eventBusName, config.region, logger);
  return new LocalCompactionEventPublisher({ file: config.localEventsFile, ...(logger ? { logger } : {}) });
}

/** Loads the EventBridge client on first publish, so a cold start that never commits does not pay for it. */
class LazyEventBridgePublisher implements CompactionEventPublisher {
  private inner: Promise<CompactionEventPublisher> | undefined;

  constructor(
    private readonly busName: string,
    private readonly region: string | undefined,
    private readonly logger: Logger | undefined,
  ) {}

  async publish(e: SessionCompacted): Promise<PublishResult> {
    this.inner ??= import('./eventbridge-publisher.js').then(
      (m) =>
        new m.EventBridgeCompactionEventPublisher({
          busName: this.busName,
          region: this.region,
          ...(this.logger ? { logger: this.logger } : {}),
        }),
    );
    try {
      return await (await this.inner).publish(e);
    } catch (err) {
      this.inner = undefined;
      return { published: false, error: err instanceof Error ? err.message : String(err) };
    }
  }
}
