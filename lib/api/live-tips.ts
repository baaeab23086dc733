// What this container knows of each conversation's live tip (SPEC P5): a conversation route
// whose tip is known here adds no DynamoDB call to the session route's path; one that is not
// known reads the conversation record once. A known tip may be stale (another container
// rotated it): the store refuses to write an ended session and names its live tip, a read of
// one shows it ended, and a deleted one answers not found, so a stale entry costs a detour,
// never a wrong answer (K2, K3). An entry is trusted for MAX_AGE_MS after the record was read:
// a conversation deleted and created again elsewhere is then seen afresh by this container, and
// a keyed retry's replay checks the incarnation on the record anyway (sessions.ts replayOf).

export interface KnownTip {
  liveSessionId: string;
  /** Names the incarnation: conversation-scoped Idempotency-Keys are kept per root (K2). */
  rootSessionId: string;
  /** Epoch ms of the last activity mark this container knows of (listing order, coarse). */
  activeAtMs: number;
  /** Epoch ms when the conversation's record was read (the entry's age counts from it). */
  readAtMs: number;
}

/** Entries kept; the least recently used go first. */
const DEFAULT_CAPACITY = 10_000;
/** How long a tip read from the record is used before the record is read again (as the record cache, P5). */
export const MAX_AGE_MS = 60_000;

export class LiveTips {
  private readonly entries = new Map<string, KnownTip>();

  constructor(
    private readonly capacity = DEFAULT_CAPACITY,
    private readonly maxAgeMs = MAX_AGE_MS,
    private readonly now: () => number = Date.now,
  ) {}

  get(tenantId: string, conversationId: string): KnownTip | undefined {
    const key = keyOf(tenantId, conversationId);
    const tip = this.entries.get(key);
    if (tip && this.now() - tip.readAtMs > this.maxAgeMs) {
      this.entries.delete(key);
      return undefined;
    }
    if (tip) {
      // Re-inserted: a Map iterates in insertion order, so the first entry is the least recently used.
      this.entries.delete(key);
      this.entries.set(key, tip);
    }
    return tip;
  }

  set(tenantId: string, conversationId: string, tip: KnownTip): void {
    const key = keyOf(tenantId, conversationId);
    this.entries.delete(key);
    this.entries.set(key, tip);
    while (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  forget(tenantId: string, conversationId: string): void {
    this.entries.delete(keyOf(tenantId, conversationId));
  }

  get size(): number {
    return this.entries.size;
  }
}

function keyOf(tenantId: string, conversationId: string): string {
  // Neither id can hold a newline (both are validated to narrow alphabets).
  return `${tenantId}\n${conversationId}`;
}
