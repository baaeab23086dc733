// What this container last saw of each session's record (SPEC P5). A warm append sends its
// transaction conditioned on it (the version), so a stale entry costs one failed condition, whose
// answer carries the current record: it can never place an item wrongly. Bounded by size (least
// recently used goes first) and age, so a container holds little and never trusts old news long.
import type { MetaItem } from './meta-row.js';

export const RECORD_CACHE_ENTRIES = 2_000;
export const RECORD_CACHE_AGE_MS = 60_000;

export class RecordCache {
  private readonly entries = new Map<string, { meta: MetaItem; at: number }>();

  constructor(
    private readonly now: () => number,
    readonly maxEntries = RECORD_CACHE_ENTRIES,
    readonly maxAgeMs = RECORD_CACHE_AGE_MS,
  ) {}

  get(pk: string): MetaItem | undefined {
    const hit = this.entries.get(pk);
    if (!hit) return undefined;
    if (this.now() - hit.at > this.maxAgeMs) {
      this.entries.delete(pk);
      return undefined;
    }
    return hit.meta;
  }

  set(meta: MetaItem | undefined): void {
    if (!meta) return;
    this.entries.delete(meta.pk);
    this.entries.set(meta.pk, { meta, at: this.now() });
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }

  drop(pk: string): void {
    this.entries.delete(pk);
  }

  get size(): number {
    return this.entries.size;
  }
}
