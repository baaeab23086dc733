// SessionCompacted publishers: what goes to EventBridge, what the local stand-in keeps, and that
// no failure ever reaches the committing caller as an exception.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../lib/logger.js';
import { EventBridgeCompactionEventPublisher } from '../../../lib/events/eventbridge-publisher.js';
import {
  compactionEventPublisherFrom,
  LocalCompactionEventPublisher,
  readCompactionEvents,
  type SessionCompacted,
} from '../../../lib/events/index.js';

const rotation: SessionCompacted = {
  tenantId: 'acme',
  parentSessionId: 'sess-parent',
  childSessionId: 'sess-child',
  mode: 'rotate',
  sessionId: 'sess-child',
  at: '2026-01-02T03:04:05.678Z',
  correlationId: 'req-123',
};
const inPlace: SessionCompacted = {
  tenantId: 'acme',
  parentSessionId: 's1',
  generation: 7,
  mode: 'in_place',
  sessionId: 's1',
  at: '2026-01-02T03:04:06.000Z',
};

const ebMock = mockClient(EventBridgeClient);
afterEach(() => ebMock.reset());

function publisher(logs: unknown[][] = [], timeoutMs?: number) {
  return new EventBridgeCompactionEventPublisher({
    busName: 'agents-bus',
    client: new EventBridgeClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
    logger: { ...silentLogger, warn: (...args) => logs.push(args) },
    traceHeader: () => 'Root=1-abc-def;Sampled=1',
    ...(timeoutMs ? { timeoutMs } : {}),
  });
}

describe('EventBridgeCompactionEventPublisher', () => {
  it('puts one entry: Source session-lineage, DetailType SessionCompacted, the bus, the event as Detail', async () => {
    ebMock.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: 'e1' }] });
    await expect(publisher().publish(rotation)).resolves.toEqual({ published: true });
    const calls = ebMock.commandCalls(PutEventsCommand);
    expect(calls).toHaveLength(1);
    const entries = calls[0]!.args[0].input.Entries!;
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      EventBusName: 'agents-bus',
      Source: 'session-lineage',
      DetailType: 'SessionCompacted',
      TraceHeader: 'Root=1-abc-def;Sampled=1',
      Time: new Date(rotation.at),
    });
    expect(JSON.parse(entries[0]!.Detail!)).toEqual(rotation);
  });

  it('reports a refused entry (PutEvents answers 200 with FailedEntryCount) without throwing', async () => {
    ebMock
      .on(PutEventsCommand)
      .resolves({ FailedEntryCount: 1, Entries: [{ ErrorCode: 'ThrottlingException', ErrorMessage: 'slow down' }] });
    const logs: unknown[][] = [];
    const r = await publisher(logs).publish(inPlace);
    expect(r).toEqual({ published: false, error: 'PutEvents refused the entry: ThrottlingException slow down' });
    expect(logs).toHaveLength(1);
    expect(logs[0]![1]).toMatchObject({ tenantId: 'acme', sessionId: 's1', busName: 'agents-bus' });
  });

  it('turns a thrown SDK error into a result, and survives a throwing log sink', async () => {
    ebMock.on(PutEventsCommand).rejects(Object.assign(new Error('no route to host'), { name: 'NetworkingError' }));
    const p = new EventBridgeCompactionEventPublisher({
      busName: 'default',
      client: new EventBridgeClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
      logger: {
        ...silentLogger,
        warn: () => {
          throw new Error('log sink down');
        },
      },
    });
    await expect(p.publish(rotation)).resolves.toEqual({ published: false, error: 'NetworkingError: no route to host' });
  });

  it('bounds the wait: a hung PutEvents is abandoned after timeoutMs', async () => {
    ebMock.on(PutEventsCommand).callsFake(
      (_input, getClient) =>
        new Promise(() => {
          void getClient; // never settles, like a black-holed endpoint
        }),
    );
    const started = Date.now();
    const r = await publisher([], 150).publish(rotation);
    expect(r).toEqual({ published: false, error: 'Error: PutEvents timed out after 150 ms' });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('refuses a malformed event without calling EventBridge', async () => {
    const r = await publisher().publish({ ...rotation, tenantId: '', at: 'yesterday' });
    expect(r.published).toBe(false);
    if (!r.published) expect(r.error).toMatch(/tenantId.*at|at.*tenantId/s);
    expect(ebMock.commandCalls(PutEventsCommand)).toHaveLength(0);
  });
});

describe('LocalCompactionEventPublisher', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('keeps events in memory, in order', async () => {
    const p = new LocalCompactionEventPublisher();
    await p.publish(rotation);
    await p.publish(inPlace);
    expect(p.events()).toEqual([rotation, inPlace]);
    p.clear();
    expect(p.events()).toEqual([]);
  });

  it('appends JSON lines another process can read back (what e2e tests read under serverless-offline)', async () => {
    dir = await mkdtemp(join(tmpdir(), 'events-'));
    const file = join(dir, 'compaction-events.jsonl');
    expect(await readCompactionEvents(file)).toEqual([]);
    const a = new LocalCompactionEventPublisher({ file });
    const b = new LocalCompactionEventPublisher({ file }); // another function bundle, same file
    await Promise.all([a.publish(rotation), b.publish(inPlace), a.publish({ ...rotation, correlationId: 'req-2' })]);
    const read = await readCompactionEvents(file);
    expect(read).toHaveLength(3);
    expect(read).toEqual(expect.arrayContaining([rotation, inPlace, { ...rotation, correlationId: 'req-2' }]));
  });

  it('reports an unwritable file as a result, not an exception', async () => {
    const logs: unknown[][] = [];
    const p = new LocalCompactionEventPublisher({
      file: '/nonexistent-dir/x/events.jsonl',
      logger: { ...silentLogger, warn: (...args) => logs.push(args) },
    });
    const r = await p.publish(rotation);
    expect(r.published).toBe(false);
    expect(logs).toHaveLength(1);
  });
});

describe('compactionEventPublisherFrom', () => {
  it('a bus name (EVENT_BUS_NAME) selects EventBridge (loaded on first publish), else the local stand-in', async () => {
    ebMock.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: 'e1' }] });
    process.env.AWS_ACCESS_KEY_ID ??= 'x';
    process.env.AWS_SECRET_ACCESS_KEY ??= 'x';
    const deployed = compactionEventPublisherFrom({ eventBusName: 'default', region: 'eu-west-1' });
    expect(deployed).not.toBeInstanceOf(LocalCompactionEventPublisher);
    await expect(deployed.publish(rotation)).resolves.toEqual({ published: true });
    expect(ebMock.commandCalls(PutEventsCommand)[0]!.args[0].input.Entries![0]!.EventBusName).toBe('default');

    expect(compactionEventPublisherFrom({ localEventsFile: '/tmp/x.jsonl' })).toBeInstanceOf(LocalCompactionEventPublisher);
    expect(compactionEventPublisherFrom({})).toBeInstanceOf(LocalCompactionEventPublisher);
  });
});
