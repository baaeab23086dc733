import { readFileSync } from 'node:fs';
import { dumpTenant } from './invariants.js';
const stack = JSON.parse(readFileSync(process.env.STACK_FILE ?? 'infra/local/.local-stack.json', 'utf8'));
const d = await dumpTenant(stack.dynamodbEndpoint, stack.tableName, process.env.TENANT!);
const byPk = new Map<string, number>();
for (const m of d.msgs) byPk.set(`${m.pk} g${m.generation}`, (byPk.get(`${m.pk} g${m.generation}`) ?? 0) + 1);
for (const [k, v] of byPk) console.log(k, v, d.metas.has(k.split('#S#')[1]!.split(' ')[0]!) ? '' : 'NO META');
for (const m of d.metas.values())
  console.log(
    'META',
    m.sessionId,
    'gen',
    m.generation,
    'last',
    m.lastSeq,
    'count',
    m.messageCount,
    'child',
    m.childSessionId ?? '-',
    'attempt',
    m.attempt ? JSON.stringify({ ...m.attempt, exp: m.leaseExpiresAt }) : '-',
    m.seal ? 'SEAL' : '',
  );
for (const o of d.other) console.log('OTHER', o.pk, o.sk);
