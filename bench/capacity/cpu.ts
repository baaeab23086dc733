// CPU accounting for the scaling run: other processes' CPU time from /proc/<pid>/stat, the
// whole machine's from /proc/stat, and where this process's main thread spent its time from
// a V8 CPU profile (node:inspector), by who owns the code on the stack.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Session, type Profiler } from 'node:inspector';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
let ticksPerSecond: number | undefined;

function clockTicks(): number {
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return ticksPerSecond;
}

/** CPU seconds (user + system, all threads) a process has used so far. */
export function processCpuSeconds(pid: number): number {
  // Fields after the ")" that closes the command name: state is field 3, utime 14, stime 15.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicks();
}

/** Busy and total CPU seconds of the whole machine so far (idle and iowait are not busy). */
export function machineCpuSeconds(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  const busy = user! + nice! + system! + irq! + softirq! + steal!;
  return { busy: busy / clockTicks(), total: (busy + idle! + iowait!) / clockTicks() };
}

export type Owner =
  | 'our code (lib, functions)'
  | 'bench harness'
  | 'AWS SDK'
  | 'Redis client'
  | 'tokenizer'
  | 'other dependencies'
  | 'node internals'
  | 'garbage collector'
  | 'V8 / native (program)'
  | 'idle (waiting for I/O)';

/** Who owns a frame's code; undefined for frames that only say "something native" (keep walking up). */
function ownerOfUrl(url: string): Owner | undefined {
  if (!url) return undefined;
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length);
    const pkg = rest.startsWith('@') ? rest.split('/').slice(0, 2).join('/') : rest.split('/')[0]!;
    if (/^@(aws-sdk|smithy|aws-crypto)\//.test(pkg)) return 'AWS SDK';
    if (
      ['ioredis', '@sesamecare-oss/redlock', 'denque', 'redis-parser', 'redis-errors', 'cluster-key-slot', 'standard-as-callback'].includes(
        pkg,
      )
    )
      return 'Redis client';
    if (pkg === 'gpt-tokenizer') return 'tokenizer';
    return 'other dependencies';
  }
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  if (path.startsWith(`${root}lib/`) || path.startsWith(`${root}functions/`)) return 'our code (lib, functions)';
  if (path.startsWith(root)) return 'bench harness';
  return undefined; // node: internals and V8 builtins: their caller decides
}

/** Milliseconds of the main thread per owner: a sample belongs to the nearest frame with an owner. */
export function ownersOf(profile: Profiler.Profile): Record<Owner, number> {
  const parent = new Map<number, number>();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const memo = new Map<number, Owner>();
  const ownerOf = (id: number): Owner => {
    const known = memo.get(id);
    if (known) return known;
    const frame = byId.get(id)!.callFrame;
    let owner: Owner | undefined;
    if (frame.functionName === '(idle)') owner = 'idle (waiting for I/O)';
    else if (frame.functionName === '(garbage collector)') owner = 'garbage collector';
    else if (frame.functionName === '(program)' || frame.functionName === '(root)') owner = 'V8 / native (program)';
    else owner = ownerOfUrl(frame.url);
    if (!owner) {
      const up = parent.get(id);
      owner = up === undefined || byId.get(up)!.callFrame.functionName === '(root)' ? 'node internals' : ownerOf(up);
    }
    memo.set(id, owner);
    return owner;
  };
  const ms = {} as Record<Owner, number>;
  const deltas = profile.timeDeltas ?? [];
  (profile.samples ?? []).forEach((id, i) => {
    const owner = ownerOf(id);
    ms[owner] = (ms[owner] ?? 0) + (deltas[i] ?? 0) / 1000;
  });
  return ms;
}

/** A CPU profile of this process around `work`. */
export async function profiled<T>(work: () => Promise<T>): Promise<{ result: T; profile: Profiler.Profile }> {
  const session = new Session();
  session.connect();
  const post = <R>(method: string, params?: object) =>
    new Promise<R>((resolve, reject) => session.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res as R))));
  try {
    await post('Profiler.enable');
    await post('Profiler.start');
    const result = await work();
    const { profile } = await post<{ profile: Profiler.Profile }>('Profiler.stop');
    return { result, profile };
  } finally {
    session.disconnect();
  }
}
