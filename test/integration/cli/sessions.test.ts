// `sessions show`, `lineage` and `audit forks` as an operator runs them: child processes against
// the test stack, sessions and rotations made with the store itself.
import { randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionPk, rotationShardOf } from '../../../lib/lineage/dynamo/keys.js';
import type { SessionRecord } from '../../../lib/lineage/types.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { cli, cliInProcess, testStackFile } from '../../support/cli.js';
import { begin, commitInput, doc, dynamoClient, makeStore, msgs, newSession } from '../lineage/support.js';
import { storeOnOwnTable, type StoreOnOwnTable } from '../sweep/own-table.js';

const ddb = dynamoClient();
const store = makeStore(ddb);
afterAll(() => ddb.destroy());

/** root → mid → tip: rotates twice; the root is then deleted and the tip has an attempt in flight. */
async function chain(): Promise<{ root: SessionRef; mid: SessionRef; tip: SessionRef; holder: string }> {
  const root = await newSession(store, msgs(1, 4));
  const r1 = await store.commitRotation(root, await begin(store, root), commitInput(msgs(1, 2)));
  const mid = { tenantId: root.tenantId, sessionId: r1.child.sessionId };
  const r2 = await store.commitRotation(mid, await begin(store, mid), commitInput(msgs(1, 3)));
  const tip = { tenantId: root.tenantId, sessionId: r2.child.sessionId };
  await store.deleteSession(root);
  const holder = `h-${randomUUID()}`;
  await begin(store, tip, holder);
  return { root, mid, tip, holder };
}

let c: Awaited<ReturnType<typeof chain>>;
beforeAll(async () => {
  c = await chain();
});

describe('sessions show', () => {
  it('an ended session: its state, links, counts and live tip (target read from the local stack file)', async () => {
    const run = await cli(['sessions', 'show', c.mid.sessionId, '--tenant', c.mid.tenantId], { stackFile: testStackFile() });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`session ${c.mid.sessionId} (tenant ${c.mid.tenantId})`);
    expect(run.stdout).toMatch(/state\s+ended \(compression\) at /);
    expect(run.stdout).toMatch(new RegExp(`links\\s+root ${c.root.sessionId}, parent ${c.root.sessionId}, child ${c.tip.sessionId}`));
    expect(run.stdout).toMatch(new RegExp(`live tip\\s+${c.tip.sessionId}\\n`));
    expect(run.stdout).toMatch(/items\s+2 \(last seq 2\)/);
    expect(run.stdout).toMatch(/attempt\s+none in flight/);
  });

  it('--json: the record with its in-flight attempt, token estimate and last activity; the live tip is itself', async () => {
    const run = await cli(['sessions', 'show', c.tip.sessionId, '--tenant', c.tip.tenantId, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as { session: SessionRecord; liveTip: string };
    const record = await store.getSession(c.tip);
    expect(out.liveTip).toBe(c.tip.sessionId);
    expect(out.session).toEqual(JSON.parse(JSON.stringify(record)));
    expect(out.session.attempt?.holder).toBe(c.holder);
    expect(out.session.tokenEstimate).toBeGreaterThan(0);
    expect(out.session.lastActivity?.label).toBe('compaction started');
  });

  it('unknown and deleted sessions: exit 1 saying which', async () => {
    const unknown = await cliInProcess(['sessions', 'show', 'no-such-session', '--tenant', c.tip.tenantId]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(`session no-such-session of tenant ${c.tip.tenantId} not found`);
    // Same id, other tenant: not visible (SPEC F2).
    const foreign = await cliInProcess(['sessions', 'show', c.tip.sessionId, '--tenant', 'someone-else']);
    expect(foreign.code).toBe(1);
    const deleted = await cliInProcess(['sessions', 'show', c.root.sessionId, '--tenant', c.root.tenantId]);
    expect(deleted.code).toBe(1);
    expect(deleted.stderr).toMatch(/was deleted at \d{4}-/);
  });

  it('a bad command line: exit 2 with the usage, before touching any stack', async () => {
    const run = await cli(['sessions', 'show', '--tenant', 'acme'], { env: { TABLE_NAME: '', DYNAMODB_ENDPOINT: '' } });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('error: missing <id>');
    expect(run.stderr).toContain('usage: npm run cli -- sessions show <id> --tenant <t>');
    for (const args of [
      ['sessions', 'show', 'x'],
      ['sessions', 'show', 'x', '--tenant', 'a/b'],
      ['sessions', 'show', 'x#y', '--tenant', 'a'],
      ['sessions', 'show', 'x', 'y', '--tenant', 'a'],
      ['sessions', 'show', 'x', '--tenant', 'a', '--bogus'],
      ['sessions', 'frobnicate'],
      [],
    ]) {
      expect((await cliInProcess(args)).code, args.join(' ')).toBe(2);
    }
    const help = await cliInProcess(['--help']);
    expect(help.code).toBe(0);
    for (const command of [
      'sessions show',
      'lineage',
      'audit forks',
      'keys create',
      'keys list',
      'keys revoke',
      'lease show',
      'lease release',
      'dlq redrive',
    ]) {
      expect(help.stdout).toContain(`  ${command} `);
    }
  });
});

describe('lineage', () => {
  it('root → tip, the live tip marked * and the deleted root x', async () => {
    const run = await cli(['lineage', c.mid.sessionId, '--tenant', c.mid.tenantId]);
    expect(run.code, run.stderr).toBe(0);
    const rows = run.stdout.split('\n').filter((l) => /^\s+[*x ]\s+\d\./.test(l));
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatch(new RegExp(`^\\s+x\\s+1\\.\\s+${c.root.sessionId}\\s+deleted at `));
    expect(rows[1]).toMatch(new RegExp(`^\\s+2\\.\\s+${c.mid.sessionId} \\(asked\\)\\s+ended`));
    expect(rows[2]).toMatch(new RegExp(`^\\s+\\*\\s+3\\.\\s+${c.tip.sessionId}\\s+live`));
    expect(run.stdout).toContain(`* live tip ${c.tip.sessionId}`);

    const json = JSON.parse((await cliInProcess(['lineage', c.tip.sessionId, '--tenant', c.tip.tenantId, '--json'])).stdout) as {
      liveTip: string;
      sessions: { sessionId: string; liveTip: boolean; deleted: boolean }[];
    };
    expect(json.liveTip).toBe(c.tip.sessionId);
    expect(json.sessions.map((s) => [s.sessionId, s.liveTip, s.deleted])).toEqual([
      [c.root.sessionId, false, true],
      [c.mid.sessionId, false, false],
      [c.tip.sessionId, true, false],
    ]);
  });

  it('of an unknown or deleted session: exit 1 with a message', async () => {
    const run = await cli(['lineage', c.root.sessionId, '--tenant', c.root.tenantId]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`error: session ${c.root.sessionId} of tenant ${c.root.tenantId} was deleted at`);
    const unknown = await cliInProcess(['lineage', 'nope', '--tenant', c.root.tenantId]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('error: session nope of tenant');
  });
});

describe('audit forks', () => {
  let own: StoreOnOwnTable;
  beforeAll(async () => {
    own = await storeOnOwnTable('cli-audit');
  });
  afterAll(() => own.ddb.destroy());

  /** What the commit transaction forbids (SPEC I1), written behind its back: two children of one parent. */
  async function rawFork(tenantId: string, parentId: string, childIds: string[]): Promise<void> {
    const parent = { tenantId, sessionId: parentId };
    const put = (Item: Record<string, unknown>) => doc(own.ddb).send(new PutCommand({ TableName: own.tableName, Item }));
    await put({
      pk: sessionPk(parent),
      sk: 'META',
      tenantId,
      sessionId: parentId,
      createdAt: new Date().toISOString(),
      endedAt: new Date().toISOString(),
      childSessionId: childIds[0],
    });
    for (const sessionId of childIds) {
      const pk = sessionPk({ tenantId, sessionId });
      await put({
        pk,
        sk: 'META',
        tenantId,
        sessionId,
        parentSessionId: parentId,
        rootSessionId: parentId,
        createdAt: new Date().toISOString(),
        parentKey: sessionPk(parent),
        rotationShard: rotationShardOf(pk, 16),
      });
    }
  }

  it('exit 0 on a table without forks, exit 3 listing each parent and its children once one is written', async () => {
    // A proper rotation is not a fork.
    const ref = await newSession(own.store, msgs(1, 4));
    await own.store.commitRotation(ref, await begin(own.store, ref), commitInput(msgs(1, 2)));
    const env = { ...process.env, TABLE_NAME: own.tableName, LOCAL_STACK_FILE: '/nonexistent/stack.json' };
    const clean = await cliInProcess(['audit', 'forks'], { env });
    expect(clean.code, clean.stderr).toBe(0);
    expect(clean.stdout).toContain(`no forks in ${own.tableName}`);

    await rawFork('acme', 'parent-1', ['child-a', 'child-b']);
    await rawFork('globex', 'parent-2', ['child-c', 'child-d', 'child-e']);
    const run = await cli(['audit', 'forks'], { env: { TABLE_NAME: own.tableName } });
    expect(run.code, run.stderr).toBe(3);
    expect(run.stdout).toContain('FORK: parent parent-1 (tenant acme) has 2 children: child-a, child-b');
    expect(run.stdout).toContain('FORK: parent parent-2 (tenant globex) has 3 children: child-c, child-d, child-e');
    expect(run.stdout).toContain(`2 forked parents in ${own.tableName}`);

    const json = await cliInProcess(['audit', 'forks', '--json'], { env });
    expect(json.code).toBe(3);
    const forks = (JSON.parse(json.stdout) as { forks: { parent: SessionRef; childSessionIds: string[] }[] }).forks;
    expect(forks.sort((a, b) => a.parent.sessionId.localeCompare(b.parent.sessionId))).toEqual([
      { parent: { tenantId: 'acme', sessionId: 'parent-1' }, childSessionIds: ['child-a', 'child-b'] },
      { parent: { tenantId: 'globex', sessionId: 'parent-2' }, childSessionIds: ['child-c', 'child-d', 'child-e'] },
    ]);
  });
});
