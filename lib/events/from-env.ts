// Picks the publisher from the environment (the contract serverless.yml honours):
//   EVENT_BUS_NAME     deployed stages: EventBridge bus name ('default' unless the eventBusName param says otherwise)
//   LOCAL_EVENTS_FILE  local stage: JSON-lines file the local stand-in appends to
//   neither            in-memory only (in-process tests)
import { LocalCompactionEventPublisher } from './local-publisher.js';
import type { CompactionEventPublisher, EventLog, PublishResult, SessionCompacted } from './session-compacted.js';

export function compactionEventPublisherFromEnv(env: NodeJS.ProcessEnv = process.env, log?: EventLog): CompactionEventPublisher {
  const busName = env.EVENT_BUS_NAME?.trim();
  if (busName) return new LazyEventBridgePublisher(busName, env.AWS_REGION, log);
  return new LocalCompactionEventPublisher({ file: env.LOCAL_EVENTS_FILE || undefined, ...(log ? { log } : {}) });
}

/** Loads the EventBridge client on first publish, so a cold start that never commits does not pay for it. */
class LazyEventBridgePublisher implements CompactionEventPublisher {
  private inner: Promise<CompactionEventPublisher> | undefined;

  constructor(
    private readonly busName: string,
    private readonly region: string | undefined,
    private readonly log: EventLog | undefined,
  ) {}

  async publish(e: SessionCompacted): Promise<PublishResult> {
    this.inner ??= import('./eventbridge-publisher.js').then(
      (m) => new m.EventBridgeCompactionEventPublisher({ busName: this.busName, region: this.region, ...(this.log ? { log: this.log } : {}) }),
    );
    try {
      return await (await this.inner).publish(e);
    } catch (err) {
      this.inner = undefined;
      return { published: false, error: err instanceof Error ? err.message : String(err) };
    }
  }
}
