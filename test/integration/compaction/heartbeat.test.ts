// Heartbeat during an attempt (SPEC C5), on real Redis + DynamoDB Local. Every write that
// carries an activity mark is wrapped to record its label (the first rides on beginAttempt, the
// ticks are touchActivity, the last rides on the commit or on the update that clears the
// attempt, P1); the real store still receives them.
import { describe, expect, it } from 'vitest';
import { compactSession } from '../../../lib/compaction/index.js';
import { ACTIVITY_LABELS, type CompactionDeps } from '../../../lib/compaction/types.js';
import type { LineageStore } from '../../../lib/lineage/types.js';
import { SUMMARY_PREFIX } from '../../../lib/items/types.js';
import { sessionKey, type SessionRef } from '../../../lib/session-ref.js';
import {
  compressedItems,
  contenderForSuite,
  depsOn,
  seedSession,
  SUMMARY,
  testEngine,
  waitFor,
  withOverrides,
  type TestEngine,
} from '../../support/compaction-fixtures.js';

const c = contenderForSuite();

function recordingStore(touches: string[], fail = false): LineageStore {
  return withOverrides<LineageStore>(c.store, {
    touchActivity: async (ref: SessionRef, label: string) => {
      touches.push(label);
      if (fail) throw new Error('touch boom');
      return c.store.touchActivity(ref, label);
    },
    beginAttempt: (ref, input) => {
      touches.push(input.activityLabel);
      return c.store.beginAttempt(ref, input);
    },
    commitRotation: async (ref, begun, input) => {
      const out = await c.store.commitRotation(ref, begun, input);
      touches.push(input.activityLabel);
      return out;
    },
    abandonAttempt: (ref, attempt, opts) => {
      if (opts?.activityLabel) touches.push(opts.activityLabel);
      return c.store.abandonAttempt(ref, attempt, opts);
    },
  });
}

const deps = (store: LineageStore, engine: TestEngine, heartbeatIntervalMs: unknown): CompactionDeps =>
  depsOn(c, { store, engine, heartbeatIntervalMs });

describe('compaction heartbeat', () => {
  it('C5: started, then in progress while the engine runs, then completed; lease released', async () => {
    const ref = await seedSession(c.store);
    const touches: string[] = [];
    const engine = testEngine(async () => {
      await waitFor(() => touches.includes(ACTIVITY_LABELS.inProgress), 'an in-progress heartbeat');
      return { items: structuredClone(SUMMARY) };
    });
    const out = await compactSession(deps(recordingStore(touches), engine, 20), { ref, mode: 'rotate', origin: 'turn', holder: 'hb' });
    expect(out.outcome).toBe('compressed');
    expect(touches[0]).toBe(ACTIVITY_LABELS.started);
    expect(touches).toContain(ACTIVITY_LABELS.inProgress);
    expect(touches.at(-1)).toBe(ACTIVITY_LABELS.completed);
    expect((await c.store.getSession(ref))?.lastActivity?.label).toBe(ACTIVITY_LABELS.completed);
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
  });

  it('C5: an engine error ends the heartbeat with failed, propagates, and releases the lease', async () => {
    const ref = await seedSession(c.store);
    const touches: string[] = [];
    const engine = testEngine(async () => {
      await waitFor(() => touches.includes(ACTIVITY_LABELS.inProgress), 'an in-progress heartbeat');
      throw new Error('compress boom');
    });
    await expect(
      compactSession(deps(recordingStore(touches), engine, 20), { ref, mode: 'rotate', origin: 'turn', holder: 'hb' }),
    ).rejects.toThrow('compress boom');
    expect(touches[0]).toBe(ACTIVITY_LABELS.started);
    expect(touches).toContain(ACTIVITY_LABELS.inProgress);
    expect(touches.at(-1)).toBe(ACTIVITY_LABELS.failed);
    expect((await c.store.getSession(ref))?.lastActivity?.label).toBe(ACTIVITY_LABELS.failed);
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
  });

  it('C5: touches that throw never affect the outcome', async () => {
    const ref = await seedSession(c.store);
    const touches: string[] = [];
    const engine = testEngine(async () => {
      await waitFor(() => touches.includes(ACTIVITY_LABELS.inProgress), 'an in-progress heartbeat');
      return { items: structuredClone(SUMMARY) };
    });
    const out = await compactSession(deps(recordingStore(touches, true), engine, 20), {
      ref,
      mode: 'rotate',
      origin: 'turn',
      holder: 'hb',
    });
    expect(out.outcome).toBe('compressed');
    expect(compressedItems(out)[0]!.content).toBe(`${SUMMARY_PREFIX} summary`);
    expect(touches.at(-1)).toBe(ACTIVITY_LABELS.completed);
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
  });

  it.each([[Number.NaN], [Number.POSITIVE_INFINITY], [0], [-1], ['abc']])(
    'C5 C6: interval %s falls back to 60 s; a strict engine is called once with only what it accepts',
    async (interval) => {
      const ref = await seedSession(c.store);
      const touches: string[] = [];
      const strict = testEngine(undefined, []);
      const out = await compactSession(deps(recordingStore(touches), strict, interval), {
        ref,
        mode: 'rotate',
        origin: 'turn',
        holder: 'hb',
        keepLast: 2,
      });
      expect(out.outcome).toBe('compressed');
      expect(strict.calls).toHaveLength(1);
      expect(strict.calls[0]!.options).toEqual({});
      // A 60 s interval (not 0 ms, not a NaN-spin) never ticks during a short attempt.
      expect(touches).toEqual([ACTIVITY_LABELS.started, ACTIVITY_LABELS.completed]);
      expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
    },
  );
});
