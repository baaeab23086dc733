// The per-container API-key cache (issue 9): a warm container reads a key once per TTL, the
// cache stays bounded, and a revoked key stops working within the TTL.
import { describe, expect, it, vi } from 'vitest';
import { CachedApiKeyResolver } from '../../../lib/api/api-key-cache.js';

function resolver(table: Map<string, string>) {
  return { resolve: vi.fn(async (k: string) => table.get(k) ?? null) };
}

describe('CachedApiKeyResolver', () => {
  it('F2 P2: answers a repeated key from memory until the TTL passes, then reads again', async () => {
    let now = 0;
    const inner = resolver(new Map([['slk_a', 't1']]));
    const cache = new CachedApiKeyResolver(inner, { ttlMs: 60_000, now: () => now });
    expect(await cache.resolve('slk_a')).toBe('t1');
    expect(await cache.resolve('slk_a')).toBe('t1');
    expect(inner.resolve).toHaveBeenCalledTimes(1);
    now = 60_001;
    expect(await cache.resolve('slk_a')).toBe('t1');
    expect(inner.resolve).toHaveBeenCalledTimes(2);
  });

  it('F2: a revoked key keeps working at most one TTL, then is refused', async () => {
    let now = 0;
    const table = new Map([['slk_a', 't1']]);
    const cache = new CachedApiKeyResolver(resolver(table), { ttlMs: 60_000, now: () => now });
    await cache.resolve('slk_a');
    table.delete('slk_a');
    now = 59_000;
    expect(await cache.resolve('slk_a')).toBe('t1');
    now = 60_001;
    expect(await cache.resolve('slk_a')).toBeNull();
  });

  it('stays bounded: the least recently used key goes first', async () => {
    const inner = resolver(
      new Map([
        ['a', 't'],
        ['b', 't'],
        ['c', 't'],
      ]),
    );
    const cache = new CachedApiKeyResolver(inner, { maxEntries: 2, now: () => 0 });
    await cache.resolve('a');
    await cache.resolve('b');
    await cache.resolve('a'); // a is now the most recent
    await cache.resolve('c'); // evicts b
    inner.resolve.mockClear();
    await cache.resolve('a');
    await cache.resolve('c');
    expect(inner.resolve).not.toHaveBeenCalled();
    await cache.resolve('b');
    expect(inner.resolve).toHaveBeenCalledTimes(1);
  });

  it('a TTL of 0 disables the cache', async () => {
    const inner = resolver(new Map([['a', 't']]));
    const cache = new CachedApiKeyResolver(inner, { ttlMs: 0, now: () => 0 });
    await cache.resolve('a');
    await cache.resolve('a');
    expect(inner.resolve).toHaveBeenCalledTimes(2);
  });
});
