// BYO Redis over TLS with AUTH (ElastiCache in-transit encryption + AUTH token, or any
// `rediss://:password@host:6379` master): a TLS-only, password-protected redis-server joins a
// 3-node Redlock quorum and takes part in acquire / refresh / release (SPEC L3, L4).
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient, createRedisClients, waitForRedis } from '../../../lib/aws-clients.js';
import { SessionLease } from '../../../lib/lease/index.js';
import { startRedis, type LocalRedisProcess } from '../../../infra/local/processes.js';
import { acquired, newSessionKey } from '../lease/lease-test-support.js';

const PASSWORD = 'p@ss:w0rd/with#symbols';

/** What the runtime builds with REDIS_TLS_CA set (lib/config.ts -> lib/aws-clients.ts). */
function createRedisClientWithCa(url: string, ca: string): Redis {
  return createRedisClient(url, { tlsCa: ca });
}

let plain: LocalRedisProcess[] = [];
let secure: LocalRedisProcess;
const clients: Redis[] = [];

beforeAll(async () => {
  [secure, ...plain] = await Promise.all([startRedis({ tls: true, password: PASSWORD }), startRedis(), startRedis()]);
  clients.push(createRedisClientWithCa(secure.url, secure.tlsCa!), ...createRedisClients(plain.map((p) => p.url)));
  await waitForRedis(clients);
}, 60_000);

afterAll(async () => {
  clients.forEach((c) => c.disconnect());
  await Promise.all([secure, ...plain].filter(Boolean).map((p) => p.stop()));
});

describe('TLS + AUTH Redis node in the Redlock quorum', () => {
  it('is reachable only over TLS and only with the password (rediss://:pw@127.0.0.1:port)', async () => {
    expect(secure.url).toBe(`rediss://:${encodeURIComponent(PASSWORD)}@127.0.0.1:${secure.port}`);
    expect(clients[0]!.status).toBe('ready');
    expect(await clients[0]!.ping()).toBe('PONG');

    // Same URL without the password: the server refuses commands.
    const noAuth = createRedisClientWithCa(`rediss://127.0.0.1:${secure.port}`, secure.tlsCa!);
    await waitForRedis([noAuth]);
    await expect(noAuth.ping()).rejects.toThrow(/NOAUTH|Authentication required|Stream isn't writeable|Connection is closed/i);
    noAuth.disconnect();

    // Without our CA the server certificate is not trusted (a private CA must be given: REDIS_TLS_CA).
    const untrusted = createRedisClient(secure.url);
    await waitForRedis([untrusted], 1500);
    expect(untrusted.status).not.toBe('ready');
    untrusted.disconnect();

    // Plain TCP to the TLS port never becomes ready (no handshake, no cleartext port).
    const cleartext = createRedisClient(`redis://:${encodeURIComponent(PASSWORD)}@127.0.0.1:${secure.port}`);
    await waitForRedis([cleartext], 1500);
    expect(cleartext.status).not.toBe('ready');
    cleartext.disconnect();
  });

  it('L3/L4: acquire, refresh and release go through all three nodes, the TLS node included', async () => {
    const lease = new SessionLease({ clients: clients });
    const key = newSessionKey();
    const redisKey = lease.keyOf(key);

    const won = acquired(await lease.tryAcquire(key, { ttlMs: 5_000, holder: 'tls-test' }));
    const values = await Promise.all(clients.map((c) => c.get(redisKey)));
    expect(values).toEqual([won.token, won.token, won.token]);

    const ttlBefore = await clients[0]!.pttl(redisKey);
    const refreshed = await lease.refresh(won, 20_000);
    expect(refreshed.refreshed).toBe(true);
    expect(await clients[0]!.pttl(redisKey)).toBeGreaterThan(Math.max(ttlBefore, 5_000));

    // A second holder is refused on every node, the TLS one included.
    const other = await lease.tryAcquire(key, { ttlMs: 5_000, holder: 'other' });
    expect(other.acquired).toBe(false);

    expect(await lease.release(won)).toEqual({ released: true });
    expect(await Promise.all(clients.map((c) => c.get(redisKey)))).toEqual([null, null, null]);
  });

  it('L4: with the TLS node as the only other live voter, a quorum of 2 still needs it', async () => {
    // Stop one plain node: the remaining quorum (2 of 3) is the TLS node plus one plain node,
    // so an acquire that succeeds proves the TLS node voted for it.
    await plain[1]!.stop();
    const lease = new SessionLease({ clients: clients });
    const key = newSessionKey();
    const won = acquired(await lease.tryAcquire(key, { ttlMs: 5_000, holder: 'tls-quorum' }));
    expect(await clients[0]!.get(lease.keyOf(key))).toBe(won.token);
    expect((await lease.refresh(won)).refreshed).toBe(true);
    expect(await lease.release(won)).toEqual({ released: true });
    expect(await clients[0]!.get(lease.keyOf(key))).toBeNull();
  });
});
