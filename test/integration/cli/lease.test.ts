// `lease show | release` as child processes against the test stack's 3 Redis nodes, with a
// lease taken by SessionLease itself.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createDynamoClient, createRedisClients, waitForRedis } from '../../../lib/aws-clients.js';
import { HeldAttempts, leaseValueOf } from '../../../lib/compaction/held-attempts.js';
import { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import { SessionLease } from '../../../lib/lease/session-lease.js';
import { sessionKey } from '../../../lib/session-ref.js';
import { cli, cliInProcess, testStackFile } from '../../support/cli.js';

const urls = process.env.REDIS_URLS!.split(',');
const redis = createRedisClients(urls);
const lease = new SessionLease({ clients: redis });
const dynamo = createDynamoClient({ endpoint: process.env.DYNAMODB_ENDPOINT });
const store = new DynamoLineageStore({ client: dynamo, tableName: process.env.TABLE_NAME! });
afterAll(() => {
  redis.forEach((c) => c.disconnect());
  dynamo.destroy();
});

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

  it('E1/E8: show without an id lists the held attempts in flight (of --tenant, or all): holder digest, never the token, expiresAt, mode, session, attempt; with an id, the held attempt too', async () => {
    await waitForRedis(redis);
    const tenantId = `t-${randomUUID().slice(0, 8)}`;
    const created = await store.createSession({ tenantId, conversationId: `cli-held-${randomUUID().slice(0, 8)}` });
    if (created.replayed) throw new Error('unexpected replay');
    const ref = { tenantId, sessionId: created.session.sessionId };
    await store.appendItems(ref, {
      prepare: asIs(Array.from({ length: 4 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `t${i}` }))),
    });
    const held = new HeldAttempts({ lease, store });
    const begun = await held.begin(ref, { mode: 'rotate', origin: 'manual', ttlMs: 60_000 });
    if (begun.outcome !== 'started') throw new Error(`not started: ${begun.outcome}`);
    const { attempt } = begun;
    try {
      const listed = await cli(['lease', 'show', '--tenant', tenantId, '--json'], { stackFile: testStackFile() });
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).not.toContain(attempt.leaseToken);
      expect(JSON.parse(listed.stdout)).toEqual({
        heldAttempts: [
          {
            tenantId,
            sessionId: ref.sessionId,
            conversationId: created.session.conversationId,
            attemptId: attempt.attemptId,
            mode: 'rotate',
            holder: leaseValueOf(attempt.leaseToken),
            expiresAt: expect.any(String),
            committing: false,
          },
        ],
      });
      const all = await cliInProcess(['lease', 'show']);
      expect(all.code, all.stderr).toBe(0);
      expect(all.stdout).toMatch(new RegExp(`${tenantId}\\s+${ref.sessionId}\\s+rotate\\s+\\S+\\s+held:\\S+\\s+${attempt.attemptId}`));
      expect(all.stdout).not.toContain(attempt.leaseToken);
      const one = await cliInProcess(['lease', 'show', ref.sessionId, '--tenant', tenantId]);
      expect(one.code, one.stderr).toBe(0);
      expect(one.stdout).toContain(`held by ${leaseValueOf(attempt.leaseToken)} on 3/3 nodes`);
      expect(one.stdout).toContain(`held attempt (the agent's own engine, E1): rotate, expires`);
      expect(one.stdout).toContain(attempt.attemptId);
      expect(one.stdout).not.toContain(attempt.leaseToken);
    } finally {
      await held.abort(ref, attempt.attemptId, attempt.leaseToken);
    }
    const after = await cliInProcess(['lease', 'show', '--tenant', tenantId]);
    expect(after.stdout).toContain(`no held attempts in flight for tenant ${tenantId}`);
  });
});
