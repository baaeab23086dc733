// bench/CAPACITY.md, rendered from one capacity run's results: every number below comes from
// that run (counted calls, computed units, the scaling run's timings); the prose says how.
import { writeFileSync } from 'node:fs';
import type { CapacityResults } from './index.js';
import { fmt } from './ceilings.js';
import type { MeasuredOperation } from './operations.js';
import type { PhaseCost } from './probe.js';
import type { ScalingResult } from './scaling.js';
import { verdict } from './verdict.js';

function table(head: string[], rows: (string | number)[][]): string {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

const kb = (bytes: number) => (bytes < 1024 ? `${bytes} B` : `${fmt(bytes / 1024)} KB`);
const ops = (p: PhaseCost) =>
  Object.entries(p.ops)
    .map(([k, v]) => `${k}${v > 1 ? ` ×${v}` : ''}`)
    .join(', ') || '–';

function redisText(op: MeasuredOperation): string {
  const nodes = op.redis.perNode.map(
    (n) =>
      Object.entries(n)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || '–',
  );
  return new Set(nodes).size === 1 ? `${nodes[0]} (each of ${nodes.length} nodes)` : nodes.map((n, i) => `node ${i}: ${n}`).join('; ');
}

function hottest(op: MeasuredOperation): string {
  const h = op.partitions[0];
  return h ? `${h.family}: ${fmt(h.wcu)} WCU, ${fmt(h.rcu)} RCU` : '–';
}

function keysTouched(op: MeasuredOperation): string {
  return (
    op.families
      .map((f) => `${f.family}${f.partitions > 1 ? ` (${f.partitions} partitions)` : ''}: ${fmt(f.wcu)} W / ${fmt(f.rcu)} R`)
      .join('; ') || '–'
  );
}

function operationsSection(r: CapacityResults): string {
  const measured = r.operations.filter((o) => !o.derivedFrom);
  const rows = measured.map((o) => [
    o.name,
    `${o.answer.calls} (${o.answer.steps} seq.)`,
    ops(o.answer),
    fmt(o.answer.wcu),
    fmt(o.answer.rcu),
    `${kb(o.answer.bytesWritten)} / ${kb(o.answer.bytesRead)}`,
    o.background ? `${o.background.calls} calls (${ops(o.background)}): ${fmt(o.background.wcu)} WCU, ${fmt(o.background.rcu)} RCU` : '–',
    redisText(o),
  ]);
  const keys = measured.map((o) => [o.name, keysTouched(o), hottest(o)]);
  return `## What each operation costs

Measured once each through the service's own entry points (the HTTP handler, the after-turn consumer, the sweep) on a
runtime built by \`lib/runtime.ts\` (defaults: extractive engine, lease TTL ${r.compactionLengths[0]?.leaseTtlMs} ms), against DynamoDB Local.
A typical item is a ${r.settings.itemTextChars}-character chat turn, stored as ${kb(r.settings.typicalItemBytes)}. "seq." is the number of DynamoDB calls one
after another (overlapping calls count once). WCU/RCU are the operation's answer; work it leaves running after it answered
(archive of the replaced generation, purge of a deleted session) is the background column.

${table(['operation', 'DynamoDB calls', 'by type', 'WCU', 'RCU', 'written / read', 'background', 'Redis commands per node'], rows)}

### Partition keys each operation touches

W / R: WCU / RCU on that key design in the operation (answer and background). The hottest key is the single partition
closest to its per-partition limit (1,000 WCU or 3,000 RCU per second).

${table(['operation', 'keys (family: WCU / RCU)', 'hottest partition'], keys)}`;
}

function ceilingsSection(r: CapacityResults): string {
  const m = r.model;
  const rows = m.keys.map((k) => [
    k.family,
    `\`${k.pattern}\``,
    k.spread,
    k.kind === 'other' ? 'runs of that operation' : `${k.kind}s`,
    `${k.operation}: ${fmt(k.wcu)} WCU, ${fmt(k.rcu)} RCU`,
    k.perSecond === null ? k.formula : `${k.formula} = **${fmt(k.perSecond, 0)}/s**`,
    k.target === null ? '–' : `${fmt(k.target, 0)}/s`,
    k.met === null ? '' : k.met ? 'meets' : '**BELOW**',
  ]);
  const targets = m.targets.map((t) => [
    t.operation,
    `${fmt(t.target, 0)}/s`,
    t.ceiling === null ? 'none (per-entity keys only)' : `${fmt(t.ceiling, 0)}/s (${t.limitedBy})`,
    t.met ? 'meets' : '**BELOW**',
  ]);
  const longest = r.compactionLengths
    .map(
      (c) =>
        `${c.fn}: timeout ${c.timeoutSeconds} s − ${c.safetyMarginMs / 1000} s margin, refresh every ${c.refreshIntervalMs / 1000} s → ${c.maxRefreshes}`,
    )
    .join('; ');
  return `## Service-wide ceilings of each key design

A key design caps the service at *spread × min(1,000 WCU / its WCU per operation, 3,000 RCU / its RCU per operation)*
operations per second: spread is the shard count of a sharded key, 1 for a single item; a key with one partition per
session (or message id, or tenant + Idempotency-Key) has no service-wide ceiling, only a per-entity one (next section).
Sharded ceilings assume the hash spreads sessions evenly over the shards. Each row is the operation of its kind that loads
the key most. Targets: ${fmt(r.targets.compaction, 0)} compactions/s and ${fmt(r.targets.append, 0)} appends/s across sessions.

Long compactions cost the attempt index more: every lease refresh also extends the attempt record, which moves its
\`attemptsByExpiry\` entry (a delete and a put). The longest compaction a function can run makes (${longest}) refreshes;
rows marked "+ N lease refreshes" add N × the measured refresh to the measured compaction.

${table(['key', 'design', 'spread', 'kind', 'heaviest operation', 'ceiling', 'target', ''], rows)}

### Targets, per operation

${table(['operation', 'target', 'lowest service-wide ceiling (key)', ''], targets)}

### Per-entity keys, proven per entity

${r.proofs.map((p) => `- **${p.family}**: ${p.instances.join(' and ')} wrote ${p.partitions.map((ps) => ps.map((x) => `\`${short(x)}\``).join(', ')).join(' and ')}: ${new Set(p.partitions.flat()).size === p.partitions.flat().length ? 'distinct partitions, so no service-wide ceiling' : '**the same partition: a shared key**'}.`).join('\n')}
${apiKeyLine(r)}
${sweepCheckpointLine(r)}`;
}

function short(partition: string): string {
  return partition.length > 48 ? `${partition.slice(0, 44)}…` : partition;
}

function apiKeyLine(r: CapacityResults): string {
  const e = r.model.entities.find((x) => x.family === 'API key');
  if (!e) return '';
  const containers = e.perSecond * r.settings.apiKeyCacheTtlSeconds;
  return `- **API key** (\`APIKEY#<sha256>\`, read-mostly): a container reads its key once per ${r.settings.apiKeyCacheTtlSeconds} s (\`API_KEY_CACHE_TTL_SECONDS\`), ${fmt(e.rcu)} RCU per read; one key's partition serves ${fmt(e.perSecond, 0)} reads/s, i.e. **${fmt(containers, 0)} warm containers per API key** before it throttles. Requests per key are not bounded by the key (a warm container answers from its cache).`;
}

function sweepCheckpointLine(r: CapacityResults): string {
  const k = r.model.keys.find((x) => x.family === 'sweep checkpoint');
  if (!k || k.perSecond === null) return '';
  return `- **Sweep checkpoint** (\`SWEEP / CHECKPOINT\`, one item): one read and one write per sweep run (${fmt(k.wcu)} WCU, ${fmt(k.rcu)} RCU): **${fmt(k.perSecond, 0)} sweep runs/s**; the sweep runs ${r.settings.sweepSchedule} (serverless.yml).`;
}

function entitySection(r: CapacityResults): string {
  const measuredOp = (name: string) => r.operations.find((o) => o.name === name && !o.derivedFrom);
  const session = r.model.entities.filter((e) => e.family === 'session' && measuredOp(e.operation)?.counts);
  const rows = session.map((e) => [
    e.operation,
    `${fmt(e.wcu)} WCU, ${fmt(e.rcu)} RCU`,
    `**${fmt(e.perSecond)}/s**`,
    e.itemsPerSecond ? `${fmt(e.itemsPerSecond, 0)} items/s` : '',
  ]);
  // The other per-entity keys: each one's busiest measured operation.
  const msg = [
    ...new Map(
      r.model.entities
        .filter((e) => e.family !== 'session' && e.family !== 'API key' && measuredOp(e.operation))
        .sort((a, b) => b.perSecond - a.perSecond)
        .map((e) => [e.family, e]),
    ).values(),
  ];
  const itemsBound = Math.max(0, ...session.map((e) => e.itemsPerSecond ?? 0));
  return `## One hot session

All of a session's writes land on its own partition (\`T#<tenant>#S#<session>\`: the META item and its items). These are
the capacity ceilings of one session, from the same counts: an append is one transaction on META plus its items, so one
session takes at most ${fmt(itemsBound, 0)} items/s, whatever the batch size. A rotation moves the session to a new
partition (the child), so rotations never heat one partition; in-place compactions stay on it, with their archive.
Two appends to one session are also serialized by its version condition (a loser retries from the image its failed
condition returned), and one session compacts at most once at a time (its lease): those bound a hot session by latency,
not capacity, and are not counted here.

${table(['operation', "on the session's busiest partition", 'per session', ''], rows)}

A lease refresh adds its attempt-record extend to the compacted session (see the refresh row above).

${msg.length ? `Other per-entity keys, at their busiest: ${msg.map((e) => `${e.family} ("${e.operation}": ${fmt(e.wcu)} WCU, ${fmt(e.rcu)} RCU) ${fmt(e.perSecond, 0)}/s per entity`).join('; ')}.` : ''}`;
}

function costSection(r: CapacityResults): string {
  const pick = r.model.costs.filter((c) => r.operations.find((o) => o.name === c.operation)?.counts || c.operation.startsWith('sweep run'));
  const rows = pick.map((c) => [
    c.operation,
    fmt(c.writeUnits),
    fmt(c.readUnits),
    `$${c.usdPer1000.toFixed(4)}`,
    `${fmt(c.perSecondAtTableQuota, 0)}/s`,
    c.unitsPerSecondAtTarget ? `${fmt(c.unitsPerSecondAtTarget.write, 0)} WRU/s, ${fmt(c.unitsPerSecondAtTarget.read, 0)} RRU/s` : '–',
  ]);
  const p = r.prices;
  return `## Cost at on-demand prices

Prices: ${p.region}, ${p.tableClass}, ${p.mode}: **$${p.perMillionWriteUnits} per million write request units, $${p.perMillionReadUnits} per million
read request units**, in effect since ${p.inEffectSince} (${p.source}); ${p.note}. A request unit is priced like the
capacity unit above (a transactional write of 1 KB = 2 WRU). Storage, Lambda, SQS and ElastiCache are not included.

The per-table on-demand quota (default ${fmt(r.tableQuota.writeUnitsPerSecond, 0)} WRU/s and ${fmt(r.tableQuota.readUnitsPerSecond, 0)} RRU/s, an adjustable
service quota, not a key design) is the first limit a deployment meets: the last column says what the targets need.

${table(['operation', 'WRU', 'RRU', 'per 1,000', 'at the default table quota', 'at the target rate'], rows)}`;
}

function sweepSection(r: CapacityResults): string {
  const sweeps = r.operations.filter((o) => o.group === 'sweep');
  const rows = sweeps.map((o) => [
    o.name,
    `${o.answer.calls} (${o.answer.steps} seq.)`,
    ops(o.answer),
    o.answer.itemsRead,
    fmt(o.answer.wcu),
    fmt(o.answer.rcu),
    redisText(o),
  ]);
  const idle = sweeps.find((o) => o.name === 'sweep run, nothing to do');
  const old = sweeps.find((o) => o.name.includes('older rotations'));
  const items = (n: number) => `${n} item${n === 1 ? '' : 's'}`;
  const flat =
    idle && old
      ? `With ${old.name.match(/(\d+) older/)?.[1]} older rotations before its checkpoint the sweep read ${items(old.answer.itemsRead)} in ${old.answer.calls} calls, ${old.answer.itemsRead === idle.answer.itemsRead && old.answer.calls === idle.answer.calls ? 'the same as' : '**not** the same as'} with none (${items(idle.answer.itemsRead)}, ${idle.answer.calls} calls): the fork audit reads only the rotations since its last run (\`findRecentForks\` from the checkpoint, less a ${r.settings.forkAuditOverlapMinutes}-minute overlap).`
      : '';
  return `## Sweep

Each run lists every \`attemptsByExpiry\` shard (${r.settings.attemptShards}, at most ${r.settings.shardQueryConcurrency} queries at once) and every \`rotationsByTime\` shard
(${r.settings.rotationShards}, same bound) for the audit, then reads and writes its checkpoint. ${flat}

${table(['run', 'DynamoDB calls', 'by type', 'items read', 'WCU', 'RCU', 'Redis per node'], rows)}`;
}

function scalingSection(s: ScalingResult | undefined): string {
  if (!s) return '## Scaling run\n\nNot run (BENCH_SCALING=0).';
  const rows = s.rows.map((x) => [
    x.concurrency,
    x.sessions,
    x.seconds,
    `**${x.sessionsPerSecond}**`,
    Object.entries(x.outcomes)
      .map(([k, v]) => `${k} ${v}`)
      .join(', '),
    x.forks,
    x.peakDynamoInFlight,
    `${x.cores.thisProcess} / ${x.cores.dynamoLocal} / ${x.cores.redis} / ${x.cores.others} (machine ${x.cores.machine} of ${s.cpus})`,
    `${x.cpuMsPerSession.thisProcess} / ${x.cpuMsPerSession.dynamoLocal} / ${x.cpuMsPerSession.redis}`,
  ]);
  const owners = [...new Set(s.rows.flatMap((x) => Object.keys(x.profile)))];
  const profileRows = owners.map((o) => [o, ...s.rows.map((x) => `${x.profile[o as keyof typeof x.profile] ?? 0}%`)]);
  return `## Scaling run (timed, DynamoDB Local)

${s.rows[0]?.sessions} distinct sessions per concurrency level, each: \`POST /sessions\`, \`POST /messages\` (${s.itemsPerSession} items), \`POST /compress\`
(rotate), through the HTTP handler in this process (one Node process standing in for many Lambda containers), a fresh
table per level. Load average before / after: ${s.loadAverageBefore.join(', ')} / ${s.loadAverageAfter.join(', ')} (${s.cpus} CPUs, shared with other work).
CPU columns are cores used on average over the level (this process / DynamoDB Local / Redis nodes / everything else on
the machine) and CPU milliseconds per session; the profile is this process's main thread (node:inspector, same run).

${table(['concurrency', 'sessions', 'seconds', 'sessions/s', 'outcomes', 'forks', 'peak DynamoDB calls in flight', 'cores: ours / DynamoDB Local / Redis / others', 'CPU ms per session: ours / DynamoDB Local / Redis'], rows)}

Where this process's main thread spent the run (share of profiled time, by who owns the code on the stack; native
frames count for the nearest caller):

${table(['owner', ...s.rows.map((x) => `c=${x.concurrency}`)], profileRows)}

${verdict(s)}`;
}

export function renderCapacity(r: CapacityResults): string {
  return `# Capacity model

Generated by \`npm run bench -- capacity\` (run ${r.startedAt}, ${r.durationSeconds ?? '?'} s, Node ${r.node}, ${r.cpus} CPUs; load average at start
${r.loadAverage.join(', ')}). Raw numbers: the \`capacity\` section of \`bench/results/latest.json\`. Nothing here is typed in by hand: calls are counted
by a DynamoDB client middleware and a Redis command hook, capacity units are computed from the item images those calls read
and wrote, and only the scaling run is timed.

Shard settings of this run: \`ATTEMPT_SHARDS\`=${r.settings.attemptShards}, \`ROTATION_SHARDS\`=${r.settings.rotationShards} (the defaults, \`lib/lineage/dynamo/keys.ts\`).

How units are computed (DynamoDB's published rules; DynamoDB Local's ConsumedCapacity is not used): an item's size is
its attribute names plus values (numbers ~1 byte per 2 digits + 1, maps and lists 3 bytes + 1 per element); a write costs 1 WCU
per started KB of the larger of its before/after images, a failed condition still costs the write, a transactional entry 2x;
each GSI an item enters, leaves, or changes in costs its own WCU on the index entry (keys + projected attributes): enter = put,
leave = delete, index key changed = delete + put, only projected attributes changed = 1, nothing projected changed = 0; index
writes caused by a transactional entry are counted at 2x as well (conservative: AWS does not document a multiplier for index
propagation). Reads: 1 RCU per started 4 KB strongly consistent, half that eventually consistent (GSI queries always are),
GetItem/BatchGetItem rounded per item, Query/Scan on the sum of the items read, a projection does not make a read cheaper,
and a read that finds nothing still costs the minimum. Limits: 1,000 WCU and 3,000 RCU per partition key value, GSIs included.

${operationsSection(r)}

${ceilingsSection(r)}

${entitySection(r)}

${costSection(r)}

${sweepSection(r)}

${scalingSection(r.scaling)}
`;
}

export function writeCapacity(file: string, r: CapacityResults): void {
  writeFileSync(file, renderCapacity(r));
}
