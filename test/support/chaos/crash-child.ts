// Child process for the crash-point suite: runs one real compactSession and really dies
// (process.exit, no finally blocks, no release) at the chosen point. Exit code 86 proves it
// died there; 0 means the attempt finished without reaching the point.
//   CRASH_POINT = after_acquire | after_begin | after_child_messages | after_commit
//   CRASH_TENANT, CRASH_SESSION, CRASH_MODE (rotate | in_place), LEASE_TTL_MS, plus the stack env.
import type { Lease } from '../../../lib/lease/index.js';
import { compactSession } from '../../../lib/compaction/index.js';
import type { LeaseApi } from '../../../lib/lease/index.js';
import type { LineageStore } from '../../../lib/lineage/types.js';
import { makeCoordinator } from '../../fixtures/coordinator.js';
import { CRASH_EXIT_CODE, crashPoints, type CrashPoint } from './crash-points.js';
import { fixedEngine, keepingEngine } from '../../fixtures/engines.js';

function die(point: string): never {
  // Synchronous write so the parent can see where we died even though exit skips flushing.
  process.stderr.write(`crash-child: dying at ${point}\n`);
  process.exit(CRASH_EXIT_CODE);
}

async function main(): Promise<void> {
  const point = process.env.CRASH_POINT as CrashPoint;
  if (!crashPoints.includes(point)) throw new Error(`unknown CRASH_POINT ${point}`);
  const ref = { tenantId: process.env.CRASH_TENANT!, sessionId: process.env.CRASH_SESSION! };
  const mode = process.env.CRASH_MODE === 'in_place' ? 'in_place' : 'rotate';
  // Packed rows (A7) carry 110 small items in one transaction: a small transaction size keeps the
  // compaction on its written-before-commit path, which this crash point is about.
  const coord = await makeCoordinator(point === 'after_child_messages' ? { transactionBytes: 2_000 } : {});

  // "After child messages written": a compaction too big for one transaction writes its items
  // (pending child / next generation) in batches before its commit; die as the first batch of rows lands.
  let commitArmed = false;
  coord.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      // The rows, not the task that lists them first (issue 28: a task names rows written ahead before they are).
      const rows = context.commandName === 'BatchWriteItemCommand' && writesRows(args.input);
      if (point === 'after_child_messages' && commitArmed && rows) die(point);
      return out;
    },
    { step: 'initialize', name: 'crashAfterMessagesWritten' },
  );

  const lease: LeaseApi = {
    tryAcquire: async (key, opts) => {
      const r = await coord.lease.tryAcquire(key, opts);
      if (point === 'after_acquire' && r.acquired) die(point);
      return r;
    },
    refresh: (l: Lease, ttl?: number) => coord.lease.refresh(l, ttl),
    release: async (l: Lease) => {
      if (point === 'after_commit') die(point);
      return coord.lease.release(l);
    },
    holderOf: (key) => coord.lease.holderOf(key),
  };
  const store: LineageStore = new Proxy(coord.store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (prop === 'beginAttempt' && typeof v === 'function') {
        return async (...args: unknown[]) => {
          const begun = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          if (point === 'after_begin') die(point);
          return begun;
        };
      }
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const arm = () => (commitArmed = true);
  const engine = point === 'after_child_messages' ? keepingEngine(110, arm) : fixedEngine({ onCall: arm });
  const outcome = await compactSession(
    { lease, store, engine, leaseTtlMs: Number(process.env.LEASE_TTL_MS ?? 1500) },
    { ref, mode, origin: 'manual', holder: `crash-${point}` },
  );
  process.stdout.write(JSON.stringify({ outcome: outcome.outcome }) + '\n');
  await coord.close();
  process.exit(0);
}

await main();

/** Whether a BatchWriteItem puts item rows (`MSG#…`), marshalled or not. */
function writesRows(input: unknown): boolean {
  const tables = Object.values(
    (input as { RequestItems?: Record<string, { PutRequest?: { Item?: { sk?: unknown } } }[]> }).RequestItems ?? {},
  );
  return tables.flat().some((w) => {
    const sk = w.PutRequest?.Item?.sk;
    const text = typeof sk === 'string' ? sk : (sk as { S?: string } | undefined)?.S;
    return text?.startsWith('MSG#') === true;
  });
}
