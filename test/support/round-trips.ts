// Counts round trips, deterministically (SPEC P1-P3): a DynamoDB client middleware and a Redis
// command hook record when each call starts and ends, as positions in one shared event order
// (never wall time). Calls that overlap run side by side; the critical path is the sequence of
// "phases", a phase being a maximal group of overlapping calls. A phase with any DynamoDB call in
// it is a sequential DynamoDB step; a phase of Redis commands only is a Redis round. So an
// ownership check that runs beside the transcript read costs no round of its own, exactly as P1
// words it ("may run beside a DynamoDB call, not after it").
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
  /** Phases containing a DynamoDB call. */
  dynamoSteps: number;
  /** Phases of Redis commands only. */
  redisRounds: number;
  /** Each phase's calls, in order, for failure messages. */
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
      client.sendCommand = ((command: { name: string; promise: Promise<unknown> }, stream?: unknown) => {
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
      }) as Redis['sendCommand'];
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

/** Interval merging over the event order: overlapping calls form one phase. */
export function phasesOf(calls: readonly Call[]): Phases {
  const sorted = [...calls].map((c) => ({ ...c, end: c.end < 0 ? Number.POSITIVE_INFINITY : c.end })).sort((a, b) => a.start - b.start);
  const phases: Call[][] = [];
  let end = -1;
  for (const c of sorted) {
    if (phases.length === 0 || c.start > end) {
      phases.push([c]);
      end = c.end;
    } else {
      phases.at(-1)!.push(c);
      end = Math.max(end, c.end);
    }
  }
  return {
    dynamoSteps: phases.filter((p) => p.some((c) => c.kind === 'dynamodb')).length,
    redisRounds: phases.filter((p) => p.every((c) => c.kind === 'redis')).length,
    detail: phases.map((p) => p.map((c) => (c.kind === 'redis' ? `redis:${c.op}@${c.node}` : c.op.replace(/Command$/, ''))).join(' ∥ ')),
  };
}
