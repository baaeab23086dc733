// Invokes the afterTurn function directly (Lambda invoke endpoint of serverless-offline) with
// crafted SQS events: the same messageId twice in one batch and in two batches racing, an event
// for another tenant's session id, malformed bodies, a missing Records field.
// Usage: KEY=... TENANT=... npx tsx test/adversarial/tools/after-turn-probe.ts
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { sqsShapedEvent } from '../../../lib/after-turn/local-invoke.js';
import { Api } from './http.js';

const stack = JSON.parse(readFileSync(process.env.STACK_FILE ?? 'infra/local/.local-stack.json', 'utf8'));
const api = new Api(stack.baseUrl, process.env.KEY!);
const tenant = process.env.TENANT!;
const invoke = async (payload: unknown) => {
  const r = await fetch(`${stack.lambdaEndpoint}/2015-03-31/functions/session-lineage-local-afterTurn/invocations`, {
    method: 'POST',
    body: JSON.stringify(payload),
  });
  return { status: r.status, text: (await r.text()).slice(0, 400) };
};
async function big(): Promise<string> {
  const id = (await api.create({})).json.session.sessionId as string;
  // Over the 8000-token threshold without tripping the HTTP path's own publish: append in one go.
  const items = [
    { role: 'user', content: 'HUMAN' },
    ...Array.from({ length: 60 }, (_, i) => ({ role: 'assistant', content: `M:at:${i}:${'z'.repeat(500)}` })),
  ];
  await api.append(id, items);
  return id;
}
const body = (sessionId: string, t = tenant) => JSON.stringify({ tenantId: t, sessionId, origin: 'turn' });

// One messageId twice in a batch
{
  const id = await big();
  const lin0 = (await api.lineage(id)).json;
  const mid = randomUUID();
  const r = await invoke(
    sqsShapedEvent([
      { messageId: mid, body: body(id) },
      { messageId: mid, body: body(id) },
    ]),
  );
  const lin = (await api.lineage(id)).json;
  console.log('dup in batch:', r.status, r.text, 'chain', lin0.chain.length, '->', lin.chain.length);
}
// Same messageId, two batches racing
{
  const id = await big();
  const mid = randomUUID();
  const [a, b] = await Promise.all([
    invoke(sqsShapedEvent([{ messageId: mid, body: body(id) }])),
    invoke(sqsShapedEvent([{ messageId: mid, body: body(id) }])),
  ]);
  const lin = (await api.lineage(id)).json;
  console.log('dup racing:', a.status, a.text, '|', b.status, b.text, 'chain', lin.chain.length);
}
// Malformed
for (const [name, ev] of [
  ['not json', sqsShapedEvent([{ messageId: 'm1', body: '{' }])],
  ['wrong origin', sqsShapedEvent([{ messageId: 'm2', body: JSON.stringify({ tenantId: tenant, sessionId: 'x', origin: 'fork' }) }])],
  ['unknown session', sqsShapedEvent([{ messageId: 'm3', body: body(randomUUID()) }])],
  [
    'hash in tenant',
    sqsShapedEvent([{ messageId: 'm4', body: JSON.stringify({ tenantId: `${tenant}#S#x`, sessionId: 'y', origin: 'turn' }) }]),
  ],
  [
    'review origin',
    sqsShapedEvent([{ messageId: 'm5', body: JSON.stringify({ tenantId: tenant, sessionId: randomUUID(), origin: 'review' }) }]),
  ],
  ['no Records', {}],
  ['Records null', { Records: null }],
  [
    'huge body',
    sqsShapedEvent([{ messageId: 'm6', body: JSON.stringify({ tenantId: tenant, sessionId: 'a'.repeat(300), origin: 'turn' }) }]),
  ],
] as [string, unknown][]) {
  console.log(name, ':', JSON.stringify(await invoke(ev)));
}
