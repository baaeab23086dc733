// After a storm: read the table and Redis directly and report the invariants.
// Usage: TENANT=... IN=/tmp/storm.json [SWEEP=1] npx tsx test/adversarial/tools/check.ts
// Reads infra/local/.local-stack.json for the endpoints.
import { readFileSync } from 'node:fs';
import { check, dumpTenant, leaseKeys } from './invariants.js';

const stack = JSON.parse(readFileSync(process.env.STACK_FILE ?? 'infra/local/.local-stack.json', 'utf8')) as {
  redisUrls: string[];
  dynamodbEndpoint: string;
  tableName: string;
  lambdaEndpoint: string;
};
const tenant = process.env.TENANT!;
const log = JSON.parse(readFileSync(process.env.IN ?? '/tmp/storm.json', 'utf8'));

if (process.env.SWEEP === '1') {
  const r = await fetch(`${stack.lambdaEndpoint}/2015-03-31/functions/session-lineage-local-sweep/invocations`, {
    method: 'POST',
    body: '{}',
  });
  console.log('sweep:', r.status, (await r.text()).slice(0, 500));
}
const dump = await dumpTenant(stack.dynamodbEndpoint, stack.tableName, tenant);
const rep = check(dump, log.acked, new Set(log.popped), new Set(log.deleted));
const leases = await leaseKeys(stack.redisUrls);
// Items in the table that no 2xx acknowledged (e.g. an append answered 503 whose transaction landed later).
const ackedSet = new Set(log.acked.map((a: { marker: string }) => a.marker));
const unacked = new Set<string>();
for (const m of dump.msgs) {
  const mk = /"content":"(M:[^"]+)"/.exec(m.body)?.[1];
  if (mk && !ackedSet.has(mk)) unacked.add(mk);
}
console.log(
  JSON.stringify(
    {
      tenant,
      sessions: rep.sessions,
      items: dump.msgs.length,
      acked: log.acked.length,
      forks: rep.forks,
      lost: rep.lost,
      holes: rep.holes,
      duplicates: rep.duplicates,
      leftoverAttempts: rep.leftoverAttempts,
      orphanItems: rep.orphanItems.slice(0, 20),
      orphanCount: rep.orphanItems.length,
      notes: rep.notes.slice(0, 20),
      leaseKeys: leases,
      otherItems: dump.other
        .map((o) => `${String(o.pk)} ${String(o.sk)}`)
        .filter((s) => !s.includes('#IDEM#') && !s.includes(' IDEM#'))
        .slice(0, 20),
      unackedButStored: [...unacked].slice(0, 20),
      unackedButStoredCount: unacked.size,
      unackedAnswers: (log.failedAppends ?? [])
        .filter((f: { markers: string[] }) => f.markers.some((m) => unacked.has(m)))
        .map((f: { status: number; code?: string; idem: boolean; ms: number }) => `${f.status} ${f.code ?? ''} idem=${f.idem} ${f.ms}ms`)
        .slice(0, 20),
      storm5xx: log.bad5xx.slice(0, 20),
      stormAnomalies: log.anomalies.slice(0, 30),
    },
    null,
    1,
  ),
);
