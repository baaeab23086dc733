// Issue 35 item 5: one tenant must not buy another's latency with big bodies. Tenant B's small
// appends are timed alone and while tenant A floods 1 MB appends as fast as its limits let it
// (four senders, a 429 retried after 10 ms, never waiting out Retry-After), interleaved in rounds
// in one run, through the real handler in one process on the local stack. Measured twice: with
// the byte budget at its default and with it off, so the row shows what the budget buys.
import { randomUUID } from 'node:crypto';
import { ApiKeyStore } from '../lib/api/api-keys.js';
import { handleRequest, type HttpRequest } from '../lib/api/http-app.js';
import { DEFAULT_BODY_BYTES_PER_SECOND } from '../lib/config.js';
import { Runtime, httpDeps } from '../lib/runtime.js';
import type { LocalStack } from '../infra/local/stack.js';
import { round, summarize, timeIt, type Summary } from './stats.js';

export interface TenantBenchRow {
  /** 'default' (RATE_LIMIT_BODY_BYTES_PER_SECOND unset) or 'off' (0). */
  byteBudget: 'default' | 'off';
  bytesPerSecond: number;
  alone: Summary;
  flooded: Summary;
  /** B's p50 while A floods / B's p50 alone. */
  ratioP50: number;
  /** A's appends that landed (200) and that were refused (429), and A's stored MB/s during the floods. */
  floodAccepted: number;
  floodRefused: number;
  floodMbPerSecond: number;
}

const ONE_MB = 'x'.repeat(1_000_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function benchTenants(stack: LocalStack, perPhase: number, rounds = 3): Promise<TenantBenchRow[]> {
  const rows: TenantBenchRow[] = [];
  for (const byteBudget of ['default', 'off'] as const) rows.push(await measure(stack, byteBudget, perPhase, rounds));
  return rows;
}

async function measure(stack: LocalStack, byteBudget: 'default' | 'off', perPhase: number, rounds: number): Promise<TenantBenchRow> {
  const rt = new Runtime({
    env: {
      REDIS_URLS: stack.redisUrls.join(','),
      DYNAMODB_ENDPOINT: stack.dynamodbEndpoint,
      TABLE_NAME: stack.tableName,
      ...(byteBudget === 'off' ? { RATE_LIMIT_BODY_BYTES_PER_SECOND: '0' } : {}),
    },
  });
  try {
    const deps = await httpDeps(rt);
    const { dynamo } = await rt.core();
    const keys = new ApiKeyStore({ client: dynamo, tableName: stack.tableName });
    const [a, b] = [await keys.create(`flood-${randomUUID().slice(0, 8)}`), await keys.create(`quiet-${randomUUID().slice(0, 8)}`)];
    const call = (key: string, method: string, path: string, body?: unknown) => {
      const req: HttpRequest = {
        method,
        path,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        query: {},
        body: Buffer.from(body === undefined ? '' : JSON.stringify(body)),
      };
      return handleRequest(req, deps, { requestId: randomUUID() });
    };
    const sessionOf = async (key: string) =>
      (JSON.parse((await call(key, 'POST', '/sessions', {})).body!) as { session: { sessionId: string } }).session.sessionId;
    const [aId, bId] = [await sessionOf(a.key), await sessionOf(b.key)];
    const small = { messages: [{ role: 'user', content: 'a small turn' }] };
    const bTimes = async (out: number[]) => {
      for (let i = 0; i < perPhase; i++) out.push(await timeIt(() => call(b.key, 'POST', `/sessions/${bId}/messages`, small)));
    };

    const alone: number[] = [];
    const flooded: number[] = [];
    let accepted = 0;
    let refused = 0;
    let floodMs = 0;
    for (let r = 0; r < rounds; r++) {
      await bTimes(alone);
      let flooding = true;
      const sender = async () => {
        while (flooding) {
          const res = await call(a.key, 'POST', `/sessions/${aId}/messages`, { messages: [{ role: 'user', content: ONE_MB }] });
          if (res.statusCode === 200) accepted++;
          else if (res.statusCode === 429) {
            refused++;
            await sleep(10);
          }
        }
      };
      const started = Date.now();
      const senders = Array.from({ length: 4 }, sender);
      await sleep(300); // the flood is under way before B is timed
      await bTimes(flooded);
      flooding = false;
      await Promise.all(senders);
      floodMs += Date.now() - started;
    }
    const [s1, s2] = [summarize(alone), summarize(flooded)];
    return {
      byteBudget,
      bytesPerSecond: byteBudget === 'off' ? 0 : DEFAULT_BODY_BYTES_PER_SECOND,
      alone: s1,
      flooded: s2,
      ratioP50: round(s2.p50 / s1.p50, 2),
      floodAccepted: accepted,
      floodRefused: refused,
      floodMbPerSecond: round(accepted / (floodMs / 1000), 2),
    };
  } finally {
    await rt.close();
  }
}
