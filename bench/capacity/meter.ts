// A DynamoDB client middleware that prices every request it sees (capacity-rules.ts) from the
// real item images: before a write it reads the items the write names, after it reads them
// again; after a read it re-reads what the read touched without its projection (a projection
// does not make a read cheaper). Those shadow reads go through a second, unwatched client, so
// they are never counted. Calls made inside `background.run` (work an operation leaves behind
// after answering) are kept apart from the answer's calls.
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  BatchGetItemCommand,
  QueryCommand,
  ScanCommand,
  type DynamoDBClient,
  type QueryCommandInput,
  type ScanCommandInput,
} from '@aws-sdk/client-dynamodb';
import type { Call } from '../../test/support/round-trips.js';
import { chargeRead, chargeWrite, type Charge, type WriteKind } from './capacity-rules.js';
import { valueText, type WireItem } from './item-size.js';
import { indexNamed, type TableModel } from './table-model.js';

export interface MeteredCall extends Call {
  charges: Charge[];
  /** Items the request read or evaluated (Query/Scan: the page; Get/BatchGet: the items found). */
  itemsRead: number;
  failed?: string;
  background: boolean;
}

/** Runs work whose DynamoDB calls belong to an operation's background part. */
export const background = new AsyncLocalStorage<true>();

interface Write {
  key: WireItem;
  kind: WriteKind;
  transactional: boolean;
}

/* The middleware sees the wire form of every command's input (raw or lib-dynamodb: marshalled at serialize). */
type Input = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export class CapacityMeter {
  readonly calls: MeteredCall[] = [];
  private recording = false;
  private tick = 0;
  private inFlight = 0;
  private lastActivity = 0;

  constructor(
    private readonly model: TableModel,
    /** An unwatched client on the same endpoint, for the shadow reads. */
    private readonly shadow: DynamoDBClient,
    /** The one table the service uses. */
    private readonly tableName: string,
  ) {}

  watch(client: DynamoDBClient): () => void {
    const name = `capacity-meter-${Math.random().toString(36).slice(2)}`;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (!this.recording) return next(args);
        const op = String(context.commandName).replace(/Command$/, '');
        const input = args.input as Input;
        const call: MeteredCall = {
          kind: 'dynamodb',
          op,
          start: this.tick++,
          end: -1,
          charges: [],
          itemsRead: 0,
          background: background.getStore() === true,
        };
        this.calls.push(call);
        this.inFlight++;
        try {
          const writes = this.writesOf(op, input);
          const before = await this.images(writes.map((w) => w.key));
          let failure: Error | undefined;
          let out: unknown;
          try {
            out = await next(args);
          } catch (err) {
            failure = err instanceof Error ? err : new Error(String(err));
            call.failed = (err as Error).name;
          }
          const after = failure ? before : await this.images(writes.map((w) => w.key));
          for (const w of writes) {
            const k = keyText(w.key, this.model);
            call.charges.push(
              ...chargeWrite(this.model, w.kind, valueText(w.key[this.model.hash]), before.get(k), after.get(k), w.transactional),
            );
          }
          await this.priceReads(op, input, call);
          if (failure) throw failure;
          return out as Awaited<ReturnType<typeof next>>;
        } finally {
          call.end = this.tick++;
          this.inFlight--;
          this.lastActivity = Date.now();
        }
      },
      { step: 'build', name },
    );
    return () => client.middlewareStack.remove(name);
  }

  start(): void {
    this.calls.length = 0;
    this.recording = true;
  }

  stop(): MeteredCall[] {
    this.recording = false;
    return [...this.calls];
  }

  /** Resolves once no call has been in flight for `quietMs` (background work finished). */
  async idle(quietMs = 250, maxMs = 60_000): Promise<void> {
    const deadline = Date.now() + maxMs;
    this.lastActivity = Date.now();
    while (Date.now() < deadline) {
      if (this.inFlight === 0 && Date.now() - this.lastActivity >= quietMs) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`capacity meter: calls still in flight after ${maxMs} ms`);
  }

  private writesOf(op: string, input: Input): Write[] {
    const key = (item: WireItem): WireItem => pick(item, this.model);
    switch (op) {
      case 'PutItem':
        return [{ key: key(input.Item), kind: 'put', transactional: false }];
      case 'UpdateItem':
        return [{ key: input.Key, kind: 'update', transactional: false }];
      case 'DeleteItem':
        return [{ key: input.Key, kind: 'delete', transactional: false }];
      case 'BatchWriteItem':
        return Object.values(input.RequestItems as Record<string, Input[]>).flatMap((reqs) =>
          reqs.map((r): Write =>
            r.PutRequest
              ? { key: key(r.PutRequest.Item), kind: 'put', transactional: false }
              : { key: r.DeleteRequest.Key, kind: 'delete', transactional: false },
          ),
        );
      case 'TransactWriteItems':
        return (input.TransactItems as Input[]).map((t): Write => {
          if (t.Put) return { key: key(t.Put.Item), kind: 'put', transactional: true };
          if (t.Update) return { key: t.Update.Key, kind: 'update', transactional: true };
          if (t.Delete) return { key: t.Delete.Key, kind: 'delete', transactional: true };
          return { key: t.ConditionCheck.Key, kind: 'check', transactional: true };
        });
      default:
        return [];
    }
  }

  private async priceReads(op: string, input: Input, call: MeteredCall): Promise<void> {
    const m = this.model;
    if (op === 'GetItem' || op === 'BatchGetItem') {
      const requests: { keys: WireItem[]; consistent: boolean }[] =
        op === 'GetItem'
          ? [{ keys: [input.Key], consistent: input.ConsistentRead === true }]
          : Object.values(input.RequestItems as Record<string, Input>).map((r) => ({
              keys: r.Keys,
              consistent: r.ConsistentRead === true,
            }));
      for (const r of requests) {
        const found = await this.images(r.keys);
        for (const k of r.keys) {
          const item = found.get(keyText(k, m));
          if (item) call.itemsRead++;
          call.charges.push(chargeRead('get', 'table', valueText(k[m.hash]), [item], r.consistent));
        }
      }
    } else if (op === 'Query' || op === 'Scan') {
      const target = input.IndexName ?? 'table';
      const hash = input.IndexName ? indexNamed(m, input.IndexName).hash : m.hash;
      const full = unprojected(input);
      const out = await this.shadow.send(
        op === 'Query' ? new QueryCommand(full as QueryCommandInput) : new ScanCommand(full as ScanCommandInput),
      );
      const items = (out.Items ?? []) as WireItem[];
      call.itemsRead += items.length;
      const partition = op === 'Query' ? partitionOfQuery(input, hash) : '(scan)';
      call.charges.push(chargeRead(op === 'Query' ? 'query' : 'scan', target, partition, items, input.ConsistentRead === true));
    }
  }

  /** Current images of `keys` (strongly consistent), by key text. */
  private async images(keys: readonly WireItem[]): Promise<Map<string, WireItem>> {
    const found = new Map<string, WireItem>();
    const table = this.tableName;
    for (let i = 0; i < keys.length; i += 100) {
      let pending: WireItem[] = dedupe(keys.slice(i, i + 100), this.model);
      while (pending.length > 0) {
        const out = await this.shadow.send(new BatchGetItemCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: true } } }));
        for (const item of out.Responses?.[table] ?? []) found.set(keyText(item, this.model), item);
        pending = out.UnprocessedKeys?.[table]?.Keys ?? [];
      }
    }
    return found;
  }
}

function pick(item: WireItem, m: TableModel): WireItem {
  return Object.fromEntries([m.hash, m.range].filter((k): k is string => !!k).map((k) => [k, item[k]!]));
}

function keyText(item: WireItem, m: TableModel): string {
  return `${valueText(item[m.hash])}\u0000${m.range ? valueText(item[m.range]) : ''}`;
}

function dedupe(keys: readonly WireItem[], m: TableModel): WireItem[] {
  const seen = new Map<string, WireItem>();
  for (const k of keys) seen.set(keyText(k, m), pick(k, m));
  return [...seen.values()];
}

/** The same read without what does not change its cost (projection, filter, Select), names and values pruned. */
function unprojected(input: Input): Input {
  const {
    ProjectionExpression: _p,
    FilterExpression: _f,
    Select: _s,
    ReturnConsumedCapacity: _r,
    ExpressionAttributeNames,
    ExpressionAttributeValues,
    ...rest
  } = input;
  const text = [rest.KeyConditionExpression ?? ''].join(' ');
  const used = (token: string) => new RegExp(`${token}(?![\\w])`).test(text);
  const names = Object.fromEntries(Object.entries((ExpressionAttributeNames ?? {}) as Record<string, string>).filter(([k]) => used(k)));
  const values = Object.fromEntries(Object.entries((ExpressionAttributeValues ?? {}) as Record<string, unknown>).filter(([k]) => used(k)));
  return {
    ...rest,
    ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
    ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
  };
}

/** The partition key value of a Query, from its key condition (`name = :value`). */
function partitionOfQuery(input: Input, hash: string): string {
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  for (const m of String(input.KeyConditionExpression ?? '').matchAll(/(#?\w+)\s*=\s*(:\w+)/g)) {
    const name = m[1]!.startsWith('#') ? names[m[1]!] : m[1];
    if (name === hash) return valueText((input.ExpressionAttributeValues as Record<string, WireItem[string]>)[m[2]!]);
  }
  return '(unknown)';
}
