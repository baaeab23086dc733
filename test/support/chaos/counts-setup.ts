// Second global setup of the chaos run: resets the counters, then prints the summary line.
import { chaosScale, countsLine, lastCountsFile, resetCounts, summarizeCounts } from './counts.js';

let startedAt = 0;

export function setup(): void {
  startedAt = Date.now();
  resetCounts();
}

export function teardown(): void {
  if (startedAt === 0) return; // setup never ran (an earlier global setup failed)
  const report = summarizeCounts(startedAt, chaosScale());
  console.log(`\n${countsLine(report)} (${(report.durationMs / 1000).toFixed(1)} s, CHAOS_SCALE=${report.scale}) -> ${lastCountsFile}`);
}
