// Retries over real HTTP, with a proxy that loses responses after the service handled the
// request (SPEC A3: a retried append is never duplicated), races a rotation against a retry,
// and stands in for a failing gateway.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  InternalServerError,
  LineageApiError,
  LineageClient,
  LineageNetworkError,
  RateLimitedError,
  type Item,
} from '../../../lib/client/index.js';
import { startFaultProxy, type FaultProxy, type ProxyAction, type SeenRequest } from '../../support/client/fault-proxy.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';

let service: LocalService;
let apiKey: string;
let proxy: FaultProxy;
let direct: LineageClient;
let viaProxy: LineageClient;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  apiKey = await service.createApiKey(`r-${randomUUID().slice(0, 8)}`);
  proxy = await startFaultProxy(service.baseUrl);
  direct = new LineageClient({ baseUrl: service.baseUrl, apiKey });
  // Short waits: the tests count attempts, not seconds.
  viaProxy = new LineageClient({ baseUrl: proxy.baseUrl, apiKey, retry: { baseDelayMs: 20, maxDelayMs: 100 } });
});

afterEach(() => {
  proxy.setRule(() => 'forward');
  proxy.seen.length = 0;
});

afterAll(async () => {
  await proxy?.close();
  await service?.stop();
});

const turn = (tag: string): Item[] => [
  { type: 'message', role: 'user', content: `${tag}: check the deploy of the billing service and tell me what broke.` },
  {
    type: 'message',
    role: 'assistant',
    content: `${tag}: ${'the migration step timed out on the orders table; rerun it with a longer lock timeout. '.repeat(4)}`,
  },
];

async function sessionWith(turns: number): Promise<string> {
  const id = (await direct.createSession({ format: 'responses' })).sessionId;
  if (turns > 0) await direct.append(id, Array.from({ length: turns }, (_, i) => turn(`t${i}`)).flat());
  return id;
}

const appendsTo = (id: string) => (r: SeenRequest) => r.method === 'POST' && r.path === `/sessions/${id}/messages`;
const count = (items: unknown[], tag: string) => items.filter((m) => JSON.stringify(m).includes(tag)).length;

describe('A3: a retried append is applied once', () => {
  it('A3: the response to the first attempt is lost after the append landed; the retry, same key and bytes, is replayed', async () => {
    const id = await sessionWith(1);
    const isAppend = appendsTo(id);
    let dropped = false;
    proxy.setRule((r) => {
      if (isAppend(r) && !dropped) {
        dropped = true;
        return 'drop-response';
      }
      return 'forward';
    });
    const r = await viaProxy.append(id, turn('once'));
    expect(r).toMatchObject({ sessionId: id, appended: 2, replayed: true });

    const attempts = proxy.seen.filter(isAppend);
    expect(attempts).toHaveLength(2);
    expect(attempts[1]!.headers['idempotency-key']).toBe(attempts[0]!.headers['idempotency-key']);
    expect(attempts[1]!.body).toBe(attempts[0]!.body);
    const items = await direct.readAll(id);
    expect(items).toHaveLength(4);
    expect(count(items, 'once:')).toBe(2);
  });

  it('A3/I4: the session rotates between the lost answer and the retry: the retry is replayed from the parent, nothing is re-sent to the child', async () => {
    const id = await sessionWith(4);
    const isAppend = appendsTo(id);
    let child: string | undefined;
    proxy.setRule(async (r) => {
      if (!isAppend(r)) return 'forward';
      if (r.n === proxy.seen.find(isAppend)!.n) return 'drop-response';
      // Hold the retry until the parent has rotated.
      child ??= (await direct.compress(id, { mode: 'rotate', keepLast: 2 })).sessionId;
      return 'forward';
    });
    const r = await viaProxy.append(id, turn('late'), { followRotation: true });
    expect(child).toBeDefined();
    expect(r).toMatchObject({ sessionId: id, replayed: true });
    expect(r.followedFrom).toBeUndefined();
    expect(proxy.seen.filter((s) => s.path === `/sessions/${child}/messages`)).toHaveLength(0);
    expect(count(await direct.readAll(id), 'late:')).toBe(2);
    // The child holds the appended items only as the rotation carried them (kept tail), never twice.
    const childItems = await direct.readAll(child!);
    expect(count(childItems, 'late:')).toBeLessThanOrEqual(2);
    expect(childItems).toHaveLength((await direct.getSession(child!)).messageCount);
  });

  it('A3/I4: a request lost before it reached the service, then a rotation: the 409 is confirmed and the append lands once, on the child', async () => {
    const id = await sessionWith(4);
    const isAppend = appendsTo(id);
    let child: string | undefined;
    proxy.setRule(async (r) => {
      if (!isAppend(r)) return 'forward';
      if (proxy.seen.filter(isAppend).length === 1) {
        child = (await direct.compress(id, { mode: 'rotate', keepLast: 2 })).sessionId;
        return 'drop-request';
      }
      return 'forward';
    });
    const r = await viaProxy.append(id, turn('moved'), { followRotation: true });
    expect(r).toMatchObject({ sessionId: child, followedFrom: id, replayed: false });
    // Attempt (lost), retry (409: the service re-read the key and found nothing), then the child.
    expect(proxy.seen.filter(isAppend)).toHaveLength(2);
    expect(count(await direct.readAll(id), 'moved:')).toBe(0);
    const childItems = await direct.readAll(child!);
    expect(count(childItems, 'moved:')).toBe(2);
    expect(childItems.slice(-2)).toEqual(turn('moved'));
  });
});

describe('requests that must not be repeated', () => {
  it('A6: a pop whose answer is lost is not retried (a second pop would remove another item)', async () => {
    const id = await sessionWith(2);
    proxy.setRule((r) => (r.method === 'DELETE' ? 'drop-response' : 'forward'));
    const err = await viaProxy.pop(id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LineageNetworkError);
    expect(err).toMatchObject({ mayHaveApplied: true, timedOut: false });
    expect(proxy.seen.filter((r) => r.method === 'DELETE')).toHaveLength(1);
    expect((await direct.getSession(id)).messageCount).toBe(3);
  });

  it("A6: a pop answered by the service's own 503 (nothing applied) is retried, and pops once", async () => {
    const id = await sessionWith(2);
    let refused = false;
    proxy.setRule((r) => {
      if (r.method !== 'DELETE' || refused) return 'forward';
      refused = true;
      return {
        respond: {
          status: 503,
          headers: { 'retry-after': '0' },
          body: { error: { code: 'unavailable', message: 'the session is busy; retry shortly' } },
        },
      };
    });
    const r = await viaProxy.pop(id);
    expect(r.removed).toEqual(turn('t1')[1]);
    expect(proxy.seen.filter((s) => s.method === 'DELETE')).toHaveLength(2);
    expect((await direct.getSession(id)).messageCount).toBe(3);
  });

  it('A6: a pop answered 429 rate_limited (a tenant limit, refused before it ran) is retried after Retry-After, and pops once', async () => {
    const id = await sessionWith(2);
    let limited = 0;
    proxy.setRule((r) => {
      if (r.method !== 'DELETE' || limited >= 2) return 'forward';
      limited++;
      return {
        respond: {
          status: 429,
          headers: { 'retry-after': '0' },
          body: { error: { code: 'rate_limited', message: 'this tenant is over its requests per second; retry after 1 s' } },
        },
      };
    });
    const r = await viaProxy.pop(id);
    expect(r.removed).toEqual(turn('t1')[1]);
    expect(proxy.seen.filter((s) => s.method === 'DELETE')).toHaveLength(3);
    expect((await direct.getSession(id)).messageCount).toBe(3);
    // Out of attempts, the caller gets the typed error.
    proxy.setRule((r) =>
      r.method === 'DELETE'
        ? { respond: { status: 429, headers: { 'retry-after': '0' }, body: { error: { code: 'rate_limited', message: 'over' } } } }
        : 'forward',
    );
    const err = await viaProxy.pop(id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err).toMatchObject({ status: 429, code: 'rate_limited' });
    expect((await direct.getSession(id)).messageCount).toBe(3);
  });

  it('A6: a pop answered 503 outcome_unknown (the store did not confirm it) is not retried (adversarial pass 3)', async () => {
    const id = await sessionWith(2);
    proxy.setRule((r) => {
      if (r.method !== 'DELETE') return 'forward';
      return {
        respond: {
          status: 503,
          headers: { 'retry-after': '0' },
          body: { error: { code: 'outcome_unknown', message: 'the store did not confirm the write; it may have been applied' } },
        },
      };
    });
    const err = await viaProxy.pop(id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LineageApiError);
    expect(err).toMatchObject({ status: 503, code: 'outcome_unknown' });
    expect(proxy.seen.filter((s) => s.method === 'DELETE')).toHaveLength(1);
  });

  it('a DELETE whose answer was lost counts as done when the retry answers 404', async () => {
    const id = await sessionWith(1);
    let dropped = false;
    proxy.setRule((r) => {
      if (r.method === 'DELETE' && !dropped) {
        dropped = true;
        return 'drop-response';
      }
      return 'forward';
    });
    await expect(viaProxy.deleteSession(id)).resolves.toBeUndefined();
    expect(proxy.seen.filter((r) => r.method === 'DELETE')).toHaveLength(2);
    await expect(direct.getSession(id)).rejects.toMatchObject({ status: 404 });
  });
});

describe('gateways and timeouts', () => {
  it('a read that times out is retried; a read the gateway keeps failing ends in the typed 5xx', async () => {
    const id = await sessionWith(1);
    let held = false;
    proxy.setRule(async (r): Promise<ProxyAction> => {
      if (r.method === 'GET' && !held) {
        held = true;
        await new Promise((res) => setTimeout(res, 1500));
      }
      return 'forward';
    });
    const impatient = new LineageClient({ baseUrl: proxy.baseUrl, apiKey, timeoutMs: 400, retry: { baseDelayMs: 10 } });
    await expect(impatient.getSession(id)).resolves.toMatchObject({ sessionId: id, messageCount: 2 });
    expect(proxy.seen.filter((r) => r.method === 'GET')).toHaveLength(2);

    proxy.seen.length = 0;
    proxy.setRule(() => ({
      respond: { status: 500, body: { error: { code: 'internal', message: 'internal error', requestId: 'req-1' } } },
    }));
    const err = await viaProxy.getSession(id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InternalServerError);
    expect(err).toMatchObject({ status: 500, code: 'internal', requestId: 'req-1', earlierAttemptMayHaveApplied: true });
    expect(proxy.seen).toHaveLength(4);

    proxy.setRule(() => ({ respond: { status: 502, body: { message: 'Internal Server Error' } } }));
    const gateway = await viaProxy.getSession(id).catch((e: unknown) => e);
    expect(gateway).toBeInstanceOf(LineageApiError);
    expect(gateway).toMatchObject({ status: 502, code: 'unexpected_response', fromService: false });
  });
});
