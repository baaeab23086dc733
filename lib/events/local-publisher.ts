// Local stand-in for EventBridge (`npm start`, serverless-offline, tests): events are kept in
// memory and, when a file is given, appended to it as JSON lines. Under serverless-offline each
// function bundle is its own module instance, so the file (LOCAL_EVENTS_FILE, created per
// offline process by infra/local/offline.ts) is how e2e tests and other processes read them.
import { silentLogger, type Logger } from '../logger.js';
import { appendFile, readFile } from 'node:fs/promises';
import {
  checkEvent,
  eventIds,
  sessionCompactedSchema,
  type CompactionEventPublisher,
  type PublishResult,
  type SessionCompacted,
} from './session-compacted.js';

export interface LocalPublisherOptions {
  /** JSON-lines file to append each event to. */
  file?: string | undefined;
  /** Where a failed publish is reported (the runtime's logger; silent when unset). */
  logger?: Logger;
}

export class LocalCompactionEventPublisher implements CompactionEventPublisher {
  private readonly kept: SessionCompacted[] = [];
  private readonly logger: Logger;

  constructor(private readonly opts: LocalPublisherOptions = {}) {
    this.logger = opts.logger ?? silentLogger;
  }

  async publish(e: SessionCompacted): Promise<PublishResult> {
    const checked = checkEvent(e);
    if (!checked.ok) return this.failed(e, checked.error);
    this.kept.push(checked.event);
    if (this.opts.file) {
      try {
        // One write per line with O_APPEND: lines from concurrent invocations never interleave.
        await appendFile(this.opts.file, JSON.stringify(checked.event) + '\n', 'utf8');
      } catch (err) {
        return this.failed(e, `could not append to ${this.opts.file}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    return { published: true };
  }

  /** Events published through this instance, oldest first. */
  events(): readonly SessionCompacted[] {
    return [...this.kept];
  }

  clear(): void {
    this.kept.length = 0;
  }

  private failed(e: SessionCompacted, error: string): PublishResult {
    try {
      this.logger.warn('SessionCompacted event not published', { ...eventIds(e), error });
    } catch {
      // never into the caller
    }
    return { published: false, error };
  }
}

/** Reads the events a LocalCompactionEventPublisher appended to `file` (none if it does not exist yet). */
export async function readCompactionEvents(file: string): Promise<SessionCompacted[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => sessionCompactedSchema.parse(JSON.parse(line)));
}
