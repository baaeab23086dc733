// `lease show | release` as child processes against the test stack's 3 Redis nodes, with a
// lease taken by SessionLease itself.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedisClients, waitForRedis } from '../../../lib/aws-clients.js';
import { SessionLease } from '../../../lib/lease/session-lease.js';
import { sessionKey } from '../../../lib/session-ref.js';
import { cli, cliInProcess, testStackFile } from '../../support/cli.js';

const urls = process.env.REDIS_URLS!.split(',');
const redis = createRedisClients(urls);
const lease = new SessionLease({ clients: redis });
afterAll(() => redis.forEach((c) => c.disconnect()));

async function held(): Promise<{ ref: { tenantId: string; sessionId: string }; token: string }> {
  await waitForRedis(redis);
  const ref = { tenantId: `t-${randomUUID().slice(0, 8)}`, sessionId: randomUUID() };
  const got = await lease.tryAcquire(sessionKey(ref), { ttlMs: 120_000, holder: 'cli-test' });
  if (!got.acquired) throw new Error('test lease not acquired');
  return { ref, token: got.token };
}

const nodeLabel = (url: string) => url.replace(/^redis:\/\/([^/]+).*$/, 'redis://$1');

describe('lease', () => {
  it('show: the holder token on each node (Redis URLs from the local stack file), or "not held"', async () => {
    const { ref, token } = await held();
    // One node lost its copy (restarted): the output must say so per node.
    await redis[2]!.del(lease.keyOf(sessionKey(ref)));
    const run = await cli(['lease', 'show', ref.sessionId, '--tenant', ref.tenantId], { stackFile: testStackFile() });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`lease lease:session:${ref.tenantId}/${ref.sessionId} on 3 nodes (quorum 2):`);
    expect(run.stdout).toMatch(new RegExp(`${nodeLabel(urls[0]!)}\\s+${token}\\s+\\(expires in \\d+\\.\\d s\\)`));
    expect(run.stdout).toMatch(new RegExp(`${nodeLabel(urls[1]!)}\\s+${token}\\s`));
    expect(run.stdout).toMatch(new RegExp(`${nodeLabel(urls[2]!)}\\s+none\\n`));
    expect(run.stdout).toContain(`held by ${token} on 2/3 nodes`);

    const free = await cliInProcess(['lease', 'show', 'free-session', '--tenant', ref.tenantId, '--json']);
    expect(free.code).toBe(0);
    expect((JSON.parse(free.stdout) as { nodes: { holder: string | null }[] }).nodes.map((n) => n.holder)).toEqual([null, null, null]);
    expect((await cliInProcess(['lease', 'show', ref.sessionId])).code).toBe(2);
  });

  it('release with a token that is not the holder: exit 1, saying so, and the lease is left as it was', async () => {
    const { ref, token } = await held();
    const run = await cli(['lease', 'release', ref.sessionId, '--tenant', ref.tenantId, '--token', 'cli-test#not-the-token', '--yes']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `token cli-test#not-the-token is not the current holder of lease:session:${ref.tenantId}/${ref.sessionId} (held by ${token}): nothing released`,
    );
    for (const c of redis) expect(await c.get(lease.keyOf(sessionKey(ref)))).toBe(token);
    await lease.release({ sessionKey: sessionKey(ref), token });
  });

  it('release with the holder token: refused without --yes off a terminal, then released on every node', async () => {
    const { ref, token } = await held();
    const args = ['lease', 'release', ref.sessionId, '--tenant', ref.tenantId, '--token', token];
    const refused = await cliInProcess(args);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('refusing to release lease');
    expect(await lease.holderOf(sessionKey(ref))).toBe(token);
    expect((await cliInProcess(['lease', 'release', ref.sessionId, '--tenant', ref.tenantId])).code).toBe(2);

    const run = await cli([...args, '--yes']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`released lease:session:${ref.tenantId}/${ref.sessionId} (token ${token})`);
    for (const c of redis) expect(await c.get(lease.keyOf(sessionKey(ref)))).toBeNull();
  });
});
