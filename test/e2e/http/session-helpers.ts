// Small helpers over the API client shared by the e2e files.
import { expect } from 'vitest';
import type { Item } from '../../../lib/items/types.js';
import type { Api } from './api-client.js';

/** Rounds `start .. start+n-1` of a plain chat conversation (user question, assistant answer). */
export function turns(start: number, n: number): Item[] {
  return Array.from({ length: n }, (_, k) => {
    const i = start + k;
    return [
      { role: 'user', content: `Question ${i}: how should the ${i}th widget be configured for the staging cluster?` },
      {
        role: 'assistant',
        content: `Answer ${i}: set replicas to ${i}, enable the health probe, and pin the image digest. ${'Details follow. '.repeat(20)}`,
      },
    ];
  }).flat();
}

export async function createSession(api: Api, body: Record<string, unknown> = {}): Promise<string> {
  const res = await api('POST', '/sessions', { body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.session.sessionId as string;
}

/** Appends in requests of at most `per` items (98 is one transaction's worth). */
export async function appendAll(api: Api, id: string, items: readonly Item[], per = 98): Promise<void> {
  for (let i = 0; i < items.length; i += per) {
    const res = await api('POST', `/sessions/${id}/messages`, { body: { messages: items.slice(i, i + per) } });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
  }
}

/** Every page from the start, following nextCursor; returns the pages' items in order. */
export async function readPages(api: Api, id: string, limit?: number): Promise<{ items: Item[]; pages: number; cursors: string[] }> {
  const items: Item[] = [];
  const cursors: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const q = [limit ? `limit=${limit}` : '', cursor ? `cursor=${cursor}` : ''].filter(Boolean).join('&');
    const res = await api('GET', `/sessions/${id}/messages${q ? `?${q}` : ''}`);
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    items.push(...(res.body.messages as Item[]));
    cursor = res.body.nextCursor as string | null;
    if (cursor) cursors.push(cursor);
    pages++;
  } while (cursor);
  return { items, pages, cursors };
}

export async function readAll(api: Api, id: string): Promise<Item[]> {
  return (await readPages(api, id)).items;
}

export function chainIds(lineage: { chain: { sessionId: string }[] }): string[] {
  return lineage.chain.map((s) => s.sessionId);
}
