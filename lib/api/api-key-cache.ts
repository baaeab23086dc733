// Per-container cache of API-key lookups, so a request (a compress loser in particular, P2)
// usually costs no DynamoDB read for authentication. Bounded (least recently used go first) and
// short-lived: a revoked key keeps working in a warm container for at most `ttlMs` (60 s by
// default; README "HTTP API").
import type { ApiKeyResolver } from './api-keys.js';

export interface ApiKeyCacheOptions {
  ttlMs?: number;
  maxEntries?: number;
  now?: () => number;
}

export const DEFAULT_API_KEY_CACHE_TTL_MS = 60_000;
const DEFAULT_MAX_ENTRIES = 1000;

export class CachedApiKeyResolver implements ApiKeyResolver {
  private readonly entries = new Map<string, { tenantId: string | null; expiresAt: number }>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly inner: ApiKeyResolver,
    opts: ApiKeyCacheOptions = {},
  ) {
    this.ttlMs = opts.ttlMs ?? DEFAULT_API_KEY_CACHE_TTL_MS;
    this.maxEntries = opts.maxEntries ?? DEFAULT_MAX_ENTRIES;
    this.now = opts.now ?? Date.now;
  }

  async resolve(key: string): Promise<string | null> {
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > this.now()) {
      // Re-insert: Map order is our recency order.
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.tenantId;
    }
    const tenantId = await this.inner.resolve(key);
    this.entries.delete(key);
    this.entries.set(key, { tenantId, expiresAt: this.now() + this.ttlMs });
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    return tenantId;
  }
}
