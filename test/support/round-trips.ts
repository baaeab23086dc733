// Counts round trips, deterministically (SPEC P1-P3): a DynamoDB client middleware and a Redis
// command hook record when each call starts and ends, as positions in one shared event order
// (never wall time). Calls of one kind that overlap run side by side and make one step: the
// three SETs of an acquire are one Redis round (a round sends one command to each node, so a
// node's next command opens the next round, even while a straggling reply of a majority-answered
// round is still on its way); DynamoDB calls awaited one after another are
// that many sequential steps. Whether a Redis round ran *beside* a DynamoDB call (P1: "an
// ownership check may run beside a DynamoDB call, not after it") is an overlap check.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Redis } from 'ioredis';

export interface Call {
  kind: 'dynamodb' | 'redis';
  /** DynamoDB command name (GetItemCommand, ...) or Redis command (set, evalsha, ...). */
  op: string;
  node?: number;
  start: number;
  end: number;
}

export interface Phases {
  /** DynamoDB calls one after another (overlapping ones count once). */
  dynamoSteps: number;
  /** Redis rounds (one command per node each, sent side by side, count once). */
  redisRounds: number;
  /** Each kind's steps in order, for assertions and failure messages. */
  dynamo: Call[][];
  redis: Call[][];
  /** Everything interleaved, one phase per group of overlapping calls of any kind. */
  detail: string[];
}

export class RoundTrips {
  private tick = 0;
  readonly calls: Call[] = [];
  private recording = false;
  private readonly undo: (() => void)[] = [];

  /** Records every command the client sends while recording is on. */
  watchDynamo(client: DynamoDBClient): this {
    const name = `round-trips-${Math.random().toString(36).slice(2)}`;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (!this.recording) return next(args);
        const call: Call = { kind: 'dynamodb', op: String(context.commandName), start: this.tick++, end: -1 };
        this.calls.push(call);
        try {
          return await next(args);
        } finally {
          call.end = this.tick++;
        }
      },
      { step: 'initialize', name },
    );
    this.undo.push(() => client.middlewareStack.remove(name));
    return this;
  }

  /** Records every command sent on these Redis clients (one per node) while recording is on. */
  watchRedis(clients: readonly Redis[]): this {
    clients.forEach((client, node) => {
      const original = client.sendCommand.bind(client);
      client.sendCommand = (command: { name: string; promise: Promise<unknown> }, stream?: unknown) => {
        const result = original(command as never, stream as never);
        if (this.recording && command.name !== 'info' && command.name !== 'select') {
          const call: Call = { kind: 'redis', op: command.name, node, start: this.tick++, end: -1 };
          this.calls.push(call);
          const done = () => {
            call.end = this.tick++;
          };
          command.promise.then(done, done);
        }
        return result;
      };
      this.undo.push(() => {
        client.sendCommand = original;
      });
    });
    return this;
  }

  async during<T>(work: () => Promise<T>): Promise<{ result: T; phases: Phases; calls: Call[] }> {
    this.calls.length = 0;
    this.recording = true;
    try {
      const result = await work();
      return { result, phases: phasesOf(this.calls), calls: [...this.calls] };
    } finally {
      this.recording = false;
    }
  }

  restore(): void {
    this.undo.splice(0).forEach((u) => u());
  }
}

/** Interval merging over the event order: overlapping calls form one group. */
export function groups(calls: readonly Call[]): Call[][] {
  const sorted = [...calls].map((c) => ({ ...c, end: c.end < 0 ? Number.POSITIVE_INFINITY : c.end })).sort((a, b) => a.start - b.start);
  const out: Call[][] = [];
  let end = -1;
  for (const c of sorted) {
    if (out.length === 0 || c.start > end) {
      out.push([c]);
      end = c.end;
    } else {
      out.at(-1)!.push(c);
      end = Math.max(end, c.end);
    }
  }
  return out;
}

/** Redis rounds in start order: one command per node each; a node seen again starts the next round. */
export function roundsPerNode(calls: readonly Call[]): Call[][] {
  const out: Call[][] = [];
  for (const c of [...calls].sort((a, b) => a.start - b.start)) {
    const round = out.at(-1);
    if (!round || round.some((x) => x.node === c.node)) out.push([c]);
    else round.push(c);
  }
  return out;
}

/** Two calls (or groups) were in flight at the same time. */
export function overlap(a: readonly Call[], b: readonly Call[]): boolean {
  const span = (g: readonly Call[]) =>
    [Math.min(...g.map((c) => c.start)), Math.max(...g.map((c) => (c.end < 0 ? Infinity : c.end)))] as const;
  const [as, ae] = span(a);
  const [bs, be] = span(b);
  return as < be && bs < ae;
}

export function phasesOf(calls: readonly Call[]): Phases {
  const dynamo = groups(calls.filter((c) => c.kind === 'dynamodb'));
  const redis = roundsPerNode(calls.filter((c) => c.kind === 'redis'));
  return {
    dynamoSteps: dynamo.length,
    redisRounds: redis.length,
    dynamo,
    redis,
    detail: groups(calls).map((p) =>
      p.map((c) => (c.kind === 'redis' ? `redis:${c.op}@${c.node}` : c.op.replace(/Command$/, ''))).join(' ∥ '),
    ),
  };
}
