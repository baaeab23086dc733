// The `goals` array of bench/results/latest.json: each performance rule of the SPEC (P1-P4) and
// the issues' targets as {id, measured, target, unit, met}, from the numbers this run measured.
import { bundleGoals, type GoalRow } from './bundle-bench.js';
import { JSON_BODY_REFUSAL_TARGET_MS } from './json-body-bench.js';
import type { BenchResults } from './report.js';

export type { GoalRow };

const atMost = (id: string, measured: number, target: number, unit: string): GoalRow => ({
  id,
  measured,
  target,
  unit,
  met: measured <= target,
});

export function goalsOf(r: BenchResults): GoalRow[] {
  const goals: GoalRow[] = [];
  if (r.commit) {
    goals.push(atMost('P1-rotation-ratio', r.commit.rotationVsBareTransaction.ratioP50, 1.5, 'x'));
    goals.push(atMost('P1-inplace-ratio', r.commit.inPlaceVsBareTransaction.ratioP50, 1.5, 'x'));
    if (r.commit.rotationVsBareCalls) goals.push(atMost('P1-rotation-vs-bare-calls', r.commit.rotationVsBareCalls.ratioP50, 1.3, 'x'));
    const rotation = r.commit.trips.find((t) => t.mode === 'rotate');
    if (rotation) {
      goals.push(atMost('P1-rotation-dynamodb-steps', rotation.dynamoSteps, 2, 'calls'));
      goals.push(atMost('P1-rotation-redis-rounds', rotation.redisRounds, 2, 'rounds'));
    }
    const small = r.commit.trips.find((t) => t.mode === 'in_place' && t.items === 10);
    const large = r.commit.trips.find((t) => t.mode === 'in_place' && t.items === 1000);
    if (small && large)
      goals.push(atMost('P3-inplace-trips-1000-vs-10', Math.round((large.dynamoSteps / small.dynamoSteps) * 100) / 100, 1, 'x'));
  }
  if (r.loser) goals.push(atMost('P2-loser-ratio', r.loser.ratioP50, 2, 'x'));
  // P5 (issue 23): a warm append is one DynamoDB call, within 1.3x a bare transaction of the same rows.
  if (r.append?.length) {
    goals.push(atMost('P5-append-warm-calls', Math.max(...r.append.map((a) => a.warmCalls)), 1, 'calls'));
    goals.push(atMost('P5-append-ratio', Math.max(...r.append.map((a) => a.warmVsBareTransaction.ratioP50)), 1.3, 'x'));
  }
  // P5: a read (tail or page) is at most two DynamoDB calls.
  if (r.reads?.length) goals.push(atMost('P5-read-calls', Math.max(...r.reads.map((x) => x.calls)), 2, 'calls'));
  // A7 (issue 19): packed rows write no more than one row per item did, and tail=20 reads no more.
  const small = r.storage?.find((s) => s.measure.startsWith('append of 10 items'));
  if (small?.oldLayout)
    goals.push(atMost('A7-append-10x200B-wcu-vs-one-row-per-item', Math.round((small.newLayout / small.oldLayout) * 100) / 100, 1, 'x'));
  const tail = r.storage?.find((s) => s.measure.startsWith('tail=20'));
  if (tail?.oldLayout)
    goals.push(atMost('A7-tail20-rcu-vs-one-row-per-item', Math.round((tail.newLayout / tail.oldLayout) * 100) / 100, 1, 'x'));
  if (r.bundles?.length) goals.push(...bundleGoals(r.bundles));
  const run = r.tokens?.filter((t) => t.kind === 'single run (random letters)');
  const widest = run?.at(-1);
  if (widest) goals.push(atMost('tokens-per-kib-380-vs-1', widest.ratioTo1Kib, 2, 'x'));
  // Issue 35 item 5: with the byte budget at its default, B's p50 under A's 1 MB flood stays within 2x of alone.
  const budgeted = r.tenants?.find((t) => t.byteBudget === 'default');
  if (budgeted) goals.push(atMost('tenant-b-p50-under-1mb-flood-vs-alone', budgeted.ratioP50, 2, 'x'));
  // Issue 35 (P6): one attempt's work is bounded, so a 10x longer session's first compress takes at most 3x as long.
  if (r.longSessions) goals.push(atMost('P6-first-inplace-60k-vs-6k', r.longSessions.ratio, 3, 'x'));
  if (r.jsonBody) goals.push(atMost('validation-1mb-numbers-refusal-cpu', r.jsonBody.refuseCpuMs, JSON_BODY_REFUSAL_TARGET_MS, 'ms'));
  if (r.clientBundle) goals.push(r.clientBundle);
  return goals;
}
