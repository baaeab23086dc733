export { runSweep, type SweepDeps, type SweepResult } from './run-sweep.js';
