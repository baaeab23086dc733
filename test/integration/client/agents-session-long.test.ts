// SPEC P6 in the client (issue 35): on a conversation longer than one attempt's bound the service
// answers `partial: true`, and LineageSession.compact() compresses again, one bounded attempt per
// request, until an answer is not partial. A service of its own with a small bound
// (COMPACTION_ATTEMPT_MAX_BYTES), so a few hundred items are "long".
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LineageClient } from '../../../lib/client/index.js';
import { LineageSession, type LineageSessionEvent } from '../../../lib/client/agents.js';
import { exchange, recording as recordingOn } from '../../support/client/agents-fixtures.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';

let service: LocalService;
let apiKey: string;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false, env: { COMPACTION_ATTEMPT_MAX_BYTES: '20000' } });
  apiKey = await service.createApiKey(`sl-${randomUUID().slice(0, 8)}`);
});
afterAll(async () => {
  await service?.stop();
});

describe('LineageSession on a long conversation (P6)', () => {
  it('P6: compact() goes on while the service answers partial, one bounded attempt per request, and returns the whole one', async () => {
    const { client, seen } = recordingOn(service.baseUrl, apiKey);
    const events: LineageSessionEvent[] = [];
    const s = new LineageSession({ client, onEvent: (e) => events.push(e) });
    // Appended in small batches: the service packs each append's items into its own rows, and a part ends at a row.
    for (let i = 0; i < 12; i++) await s.addItems(exchange(40, `batch${i}`));
    const reader = new LineageClient({ baseUrl: service.baseUrl, apiKey });
    const before = (await reader.getConversation(await s.getSessionId())).messageCount;
    expect(before).toBe(480);
    const last = await s.compact({ mode: 'in_place', keepLast: 2 });
    expect(last).toMatchObject({ outcome: 'compressed', mode: 'in_place' });
    expect(last.partial).toBeUndefined();
    const compresses = seen.filter((r) => r.method === 'POST' && r.path.endsWith('/compress'));
    expect(compresses.length).toBeGreaterThan(2);
    const answers = events.flatMap((e) => (e.type === 'compacted' ? [e.response] : []));
    expect(answers).toHaveLength(compresses.length);
    expect(answers.slice(0, -1).every((a) => a.partial === true)).toBe(true);
    expect((await reader.getConversation(await s.getSessionId())).messageCount).toBeLessThan(before / 10);
  }, 120_000);
});
