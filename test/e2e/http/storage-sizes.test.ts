// Sizes over real HTTP (SPEC A7, A5, F1; issue 19): a computer-use screenshot, a 3.9 MB item, a
// 1,000-item append racing another writer, and the refusals (413 naming messages[i], a body over
// 5 MB, a malformed item deep in a long append), each leaving nothing written.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Item } from '../../../lib/items/types.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';
import { apiClient, type Api } from './api-client.js';
import { createSession, readAll, readPages } from './session-helpers.js';

let service: LocalService;
let api: Api;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  api = apiClient(service.baseUrl, await service.createApiKey(`sizes-${randomUUID().slice(0, 8)}`));
});

afterAll(async () => {
  await service?.stop();
});

/** An item of exactly `bytes` bytes of JSON. */
function sized(bytes: number, tag = ''): Item {
  const frame = Buffer.byteLength(JSON.stringify({ role: 'user', content: tag }), 'utf8');
  return { role: 'user', content: tag + 'x'.repeat(bytes - frame) };
}

/** What the Agents SDK appends after a computer action: a screenshot as a base64 data URL. */
function screenshotOutput(bytes: number, callId: string): Item {
  return {
    type: 'computer_call_output',
    call_id: callId,
    output: { type: 'computer_screenshot', image_url: `data:image/png;base64,${'iVBORw0KGgoAAAANSUhEUgAA'.repeat(Math.ceil(bytes / 24))}` },
  };
}

const append = (id: string, messages: unknown[], extra: Record<string, unknown> = {}) =>
  api('POST', `/sessions/${id}/messages`, { body: { messages, ...extra } });

describe('A7 over HTTP', () => {
  it('A7: a computer-use turn with a 600 KB screenshot round-trips deep-equal (pages and tail)', async () => {
    const id = await createSession(api, { format: 'responses' });
    const turn: Item[] = [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'open the settings page' }] },
      { type: 'computer_call', call_id: 'c1', action: { type: 'screenshot' }, status: 'completed' },
      screenshotOutput(600_000, 'c1'),
    ];
    const res = await append(id, turn);
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    expect(await readAll(api, id)).toEqual(turn);
    const tail = await api('GET', `/sessions/${id}/messages?tail=2`);
    expect(tail.body.messages).toEqual(turn.slice(1));
  });

  it('A7/A5: a 3.9 MB item is stored and read back deep-equal, alone in its page', async () => {
    const id = await createSession(api);
    const big = sized(3_900_000, 'big:');
    expect((await append(id, [{ role: 'user', content: 'before' }])).status).toBe(200);
    const big2 = sized(3_900_000, 'big2:');
    for (const item of [big, big2]) {
      const res = await append(id, [item]);
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    }
    // Every response stays under Lambda's 6 MB: the second 3.9 MB item comes back in a page of its own.
    const { items, pages } = await readPages(api, id);
    expect(items).toEqual([{ role: 'user', content: 'before' }, big, big2]);
    expect(pages).toBe(2);
    const tail = await api('GET', `/sessions/${id}/messages?tail=2`);
    expect(tail.body.messages).toEqual([big2]);
    expect(tail.body.truncated).toBe(true);
  });

  it('A7/I4: a 1,000-item append lands contiguously and in order while another client appends one item at a time', async () => {
    const id = await createSession(api);
    const bulk = Array.from({ length: 1000 }, (_, i): Item => ({ role: 'user', content: `bulk ${i}` }));
    let racing = true;
    const racer = (async () => {
      let n = 0;
      while (racing) expect((await append(id, [{ role: 'assistant', content: `single ${n++}` }])).status).toBe(200);
      return n;
    })();
    await new Promise((r) => setTimeout(r, 50));
    const res = await append(id, bulk);
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    expect(res.body.appended).toBe(1000);
    await new Promise((r) => setTimeout(r, 50));
    racing = false;
    const n = await racer;
    const all = (await readPages(api, id, 137)).items;
    expect(all).toHaveLength(1000 + n);
    const start = all.findIndex((it) => it.content === 'bulk 0');
    expect(all.slice(start, start + 1000)).toEqual(bulk);
    expect(all.filter((it) => typeof it.content === 'string' && it.content.startsWith('single')).map((it) => it.content)).toEqual(
      Array.from({ length: n }, (_, i) => `single ${i}`),
    );
  });

  it('A7: a 4.8 MB append (beyond one DynamoDB transaction) lands whole, and its Idempotency-Key replays it', async () => {
    const id = await createSession(api);
    const items = Array.from({ length: 1200 }, (_, i) => sized(4_000, `${i}:`));
    const headers = { 'idempotency-key': `bulk-${randomUUID()}` };
    const first = await api('POST', `/sessions/${id}/messages`, { body: { messages: items }, headers });
    expect(first.status, JSON.stringify(first.body).slice(0, 300)).toBe(200);
    const again = await api('POST', `/sessions/${id}/messages`, { body: { messages: items }, headers });
    expect(again.body).toEqual(first.body);
    expect(await readAll(api, id)).toEqual(items);
  });

  it('A7: an item of 4.3 MB is 413 naming messages[1] and the limit; nothing is written', async () => {
    const id = await createSession(api);
    const res = await append(id, [{ role: 'user', content: 'ok' }, sized(4_300_000)]);
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
    expect(res.body.error.message).toBe('messages[1] is 4300000 bytes stored; the limit is 4000000');
    expect(await readAll(api, id)).toEqual([]);
  });

  it('A7/F1: a body over 5 MB (5,242,880 bytes) is 413 before any write', async () => {
    const id = await createSession(api);
    const res = await append(id, [sized(2_700_000, 'a:'), sized(2_700_000, 'b:')]);
    expect(res.status).toBe(413);
    expect(res.body.error.message).toMatch(/limit is 5242880/);
    expect(await readAll(api, id)).toEqual([]);
  });

  it('A1/A7: a malformed item at index 300 of 301 is 400 naming messages[300]; nothing is written', async () => {
    const id = await createSession(api);
    const items: unknown[] = Array.from({ length: 300 }, (_, i) => ({ role: 'user', content: `m${i}` }));
    items.push({ role: 'wizard', content: 'x' });
    const res = await append(id, items);
    expect(res.status).toBe(400);
    expect(res.body.field).toMatch(/^messages\[300\]/);
    expect(await readAll(api, id)).toEqual([]);
  });
});
