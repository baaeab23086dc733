/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/restrict-template-expressions -- ad-hoc attack tooling over untyped JSON replies */
// Hostile and agent-shaped inputs against a running service: every case prints status + error
// code; a 5xx, a 2xx that does not read back verbatim, or a 2xx for something the contract
// refuses is flagged. Usage: BASE=http://127.0.0.1:3100 KEY=slk_... npx tsx test/adversarial/tools/probe-inputs.ts
import { isDeepStrictEqual } from 'node:util';
import { Api, badServerError, raw, type Reply } from './http.js';

const base = process.env.BASE ?? 'http://127.0.0.1:3100';
const key = process.env.KEY ?? '';
const api = new Api(base, key);
const flagged: string[] = [];
let cases = 0;

function show(name: string, r: Reply, expect?: (r: Reply) => string | undefined): void {
  cases++;
  const bad = badServerError(r) ?? (r.error ? `transport: ${r.error}` : undefined) ?? expect?.(r);
  const line = `${bad ? 'FLAG' : 'ok  '} ${name}: ${r.status} ${r.json?.error?.code ?? ''} ${r.json?.field ?? ''} ${bad ? `<< ${bad}` : ''}`;
  console.log(line.slice(0, 400));
  if (bad) flagged.push(line);
}

const status =
  (...allowed: number[]) =>
  (r: Reply) =>
    allowed.includes(r.status) ? undefined : `expected ${allowed.join('/')}`;

async function fresh(format: 'chat' | 'responses' = 'chat'): Promise<string> {
  const r = await api.create({ format });
  if (r.status !== 201) throw new Error(`create failed ${r.status} ${r.text}`);
  return r.json.session.sessionId as string;
}

/** Appends one item alone and checks it reads back deep-equal (or is refused with a 4xx). */
async function roundTrip(name: string, format: 'chat' | 'responses', item: unknown, wantStatus?: number): Promise<void> {
  const id = await fresh(format);
  const r = await api.append(id, [item]);
  show(`${format} ${name}`, r, (x) => {
    if (wantStatus !== undefined && x.status !== wantStatus) return `expected ${wantStatus}`;
    return undefined;
  });
  if (r.status === 200) {
    const back = await api.page(id);
    const got = back.json?.messages?.[0];
    const sent = JSON.parse(JSON.stringify(item));
    if (!isDeepStrictEqual(got, sent)) {
      const line = `FLAG ${format} ${name}: read back differs: sent ${JSON.stringify(sent).slice(0, 200)} got ${JSON.stringify(got).slice(0, 200)}`;
      console.log(line);
      flagged.push(line);
    }
  }
}

async function rawAppend(
  name: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
  expect?: (r: Reply) => string | undefined,
) {
  const id = await fresh();
  const r = await raw(base, {
    method: 'POST',
    path: `/sessions/${id}/messages`,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body,
  });
  show(name, r, expect);
  return { id, r };
}

async function main() {
  // ---- agent-shaped valid items (must round-trip) ----
  const chatValid: [string, unknown][] = [
    [
      'tool_calls content null',
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
    ],
    [
      'content parts',
      {
        role: 'user',
        content: [
          { type: 'text', text: 'hi' },
          { type: 'image_url', image_url: { url: 'data:x' } },
        ],
      },
    ],
    ['unknown part type', { role: 'user', content: [{ type: 'future_part', blob: { a: [1, 2] } }] }],
    ['extra fields', { role: 'user', content: 'x', extra: { nested: [null, true, 1.5] }, 'a.b': 1, '': 'empty key' }],
    ['refusal', { role: 'assistant', refusal: 'no' }],
    ['__proto__ key', JSON.parse('{"role":"user","content":"x","__proto__":{"polluted":true}}')],
    ['constructor key', { role: 'user', content: 'x', constructor: { prototype: { y: 1 } } }],
    ['unicode edge', { role: 'user', content: '\u0000\u2028\u2029\uFEFF\u{1F600}\u{10FFFF}e\u0301' }],
    [
      'custom tool type',
      { role: 'assistant', content: null, tool_calls: [{ id: 'c2', type: 'custom', custom: { name: 'x', input: 'y' } }] },
    ],
    ['tool name with content parts', { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'r' }] }],
    ['-0 number', JSON.parse('{"role":"user","content":"x","n":-0}')],
    ['max safe ints', { role: 'user', content: 'x', n: [9007199254740991, -9007199254740991, 5e-324, 1.7976931348623157e308] }],
    ['synthetic true', { role: 'user', content: 'x', synthetic: true }],
  ];
  for (const [n, it] of chatValid) await roundTrip(n, 'chat', it, 200);

  const respValid: [string, unknown][] = [
    ['message', { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }],
    ['role-only message', { role: 'user', content: 'hi' }],
    ['function_call', { type: 'function_call', callId: 'k1', name: 'f', arguments: '{}', status: 'completed', id: 'fc_1' }],
    [
      'function_call_result',
      { type: 'function_call_result', callId: 'k1', name: 'f', status: 'completed', output: { type: 'text', text: 'ok' } },
    ],
    ['function_call_output', { type: 'function_call_output', call_id: 'k1', output: 'ok' }],
    ['reasoning', { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 's' }], encrypted_content: 'AAA' }],
    ['hosted_tool_call', { type: 'hosted_tool_call', name: 'web_search', arguments: '{}', status: 'completed', output: 'x' }],
    ['web_search_call', { type: 'web_search_call', id: 'ws', status: 'completed', action: { type: 'search', query: 'q' } }],
    ['unknown type', { type: 'brand_new_item', anything: { deep: [1, { x: null }] } }],
    ['computer_call_result', { type: 'computer_call_result', callId: 'cc', output: { type: 'computer_screenshot', data: 'x' } }],
    ['mcp_call', { type: 'mcp_call', name: 'n', arguments: '{}', output: null, server_label: 's' }],
  ];
  for (const [n, it] of respValid) await roundTrip(n, 'responses', it, 200);

  // ---- malformed items (must be 400 naming index/field) ----
  const chatBad: [string, unknown][] = [
    ['no role', { content: 'x' }],
    ['role number', { role: 1, content: 'x' }],
    ['role constructor', { role: 'constructor', content: 'x' }],
    ['role __proto__', JSON.parse('{"role":"__proto__","content":"x"}')],
    ['role toString', { role: 'toString', content: 'x' }],
    ['content number', { role: 'user', content: 5 }],
    ['content null user', { role: 'user', content: null }],
    ['content object', { role: 'user', content: { type: 'text', text: 'x' } }],
    ['part not object', { role: 'user', content: ['x'] }],
    ['part text missing', { role: 'user', content: [{ type: 'text' }] }],
    ['part type constructor', { role: 'user', content: [{ type: 'constructor' }] }],
    ['part type __proto__', { role: 'user', content: [{ type: '__proto__' }] }],
    ['tool_calls not array', { role: 'assistant', content: null, tool_calls: {} }],
    ['tool_call no id', { role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }] }],
    [
      'tool_call args object',
      { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: { a: 1 } } }] },
    ],
    ['tool_call null', { role: 'assistant', content: null, tool_calls: [null] }],
    ['tool no tool_call_id', { role: 'tool', content: 'x' }],
    ['tool_call_id number', { role: 'tool', tool_call_id: 5, content: 'x' }],
    ['assistant null no calls', { role: 'assistant', content: null }],
    ['assistant empty calls', { role: 'assistant', content: null, tool_calls: [] }],
    ['name number', { role: 'user', content: 'x', name: 5 }],
    ['synthetic string', { role: 'user', content: 'x', synthetic: 'yes' }],
    ['item array', [{ role: 'user', content: 'x' }]],
    ['item null', null],
    ['item string', 'hello'],
  ];
  for (const [n, it] of chatBad) await roundTrip(n, 'chat', it, 400);

  const respBad: [string, unknown][] = [
    ['no type no role', { content: 'x' }],
    ['type number', { type: 1 }],
    ['function_call no call id', { type: 'function_call', name: 'f', arguments: '{}' }],
    ['function_call args object', { type: 'function_call', call_id: 'x', name: 'f', arguments: {} }],
    ['function_call_result no output', { type: 'function_call_result', callId: 'x' }],
    ['function_call_output output number', { type: 'function_call_output', call_id: 'x', output: 5 }],
    ['reasoning summary string', { type: 'reasoning', summary: 'x' }],
    ['message bad role', { type: 'message', role: 'tool', content: 'x' }],
    ['message no content', { type: 'message', role: 'user' }],
    ['type constructor', { type: 'constructor' }],
    ['type toString', { type: 'toString', x: 1 }],
    ['type hasOwnProperty', { type: 'hasOwnProperty' }],
    ['callId null and call_id missing', { type: 'function_call_output', callId: null, output: 'x' }],
  ];
  for (const [n, it] of respBad) await roundTrip(n, 'responses', it);

  // ---- big / deep ----
  await roundTrip(
    'huge arguments 300KB',
    'chat',
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'h', type: 'function', function: { name: 'f', arguments: 'a'.repeat(300_000) } }],
    },
    200,
  );
  await roundTrip('item 390KB', 'chat', { role: 'user', content: 'b'.repeat(390_000) }, 413);
  await roundTrip('multibyte 200K x 3B', 'chat', { role: 'user', content: '\u20ac'.repeat(130_000) }, 413);
  let deep: any = 'x';
  for (let i = 0; i < 60; i++) deep = { d: deep };
  await roundTrip('nest 60', 'chat', { role: 'user', content: 'x', deep }, 200);
  let deeper: any = 'x';
  for (let i = 0; i < 70; i++) deeper = [deeper];
  await roundTrip('nest 70 arrays', 'chat', { role: 'user', content: 'x', deeper });
  let veryDeep = '"x"';
  for (let i = 0; i < 100_000; i++) veryDeep = `[${veryDeep}`;
  veryDeep += ']'.repeat(100_000);
  await rawAppend('nest 100k raw', `{"messages":[{"role":"user","content":"x","d":${veryDeep}}]}`, {}, status(400));
  // JSON.parse recursion: 1 MiB of '['
  await rawAppend('1MiB of [', '['.repeat(1_000_000), {}, status(400, 413));

  // ---- numbers ----
  for (const lit of [
    '12345678901234567890',
    '1e400',
    '1e-400',
    '-1e400',
    '0.1',
    '1.0',
    '1E2',
    '1e+2',
    '100000000000000000000000',
    '0.30000000000000004',
    '2.5e-324',
    '4.9e-324',
    '1.00000000000000001',
  ]) {
    await rawAppend(`number ${lit}`, `{"messages":[{"role":"user","content":"x","n":${lit}}]}`);
  }
  await rawAppend(
    'number as key-like string',
    '{"messages":[{"role":"user","content":"12345678901234567890","n":"1e400"}]}',
    {},
    status(200),
  );
  await rawAppend('number in expectedCount 0.0', '{"messages":[{"role":"user","content":"x"}],"expectedCount":0.0}', {}, status(200, 400));
  await rawAppend('expectedCount 1e0 on empty', '{"messages":[{"role":"user","content":"x"}],"expectedCount":1e0}', {}, status(409));
  await rawAppend('expectedCount -0', '{"messages":[{"role":"user","content":"x"}],"expectedCount":-0}', {}, status(200));
  await rawAppend('expectedCount string', '{"messages":[{"role":"user","content":"x"}],"expectedCount":"0"}', {}, status(400));
  await rawAppend('expectedCount null', '{"messages":[{"role":"user","content":"x"}],"expectedCount":null}', {}, status(400));
  await rawAppend('expectedCount huge', '{"messages":[{"role":"user","content":"x"}],"expectedCount":9007199254740993}', {}, status(400));

  // ---- duplicate keys ----
  await rawAppend('dup key messages', '{"messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}');
  await rawAppend('dup role', '{"messages":[{"role":"tool","role":"user","content":"a"}]}');
  await rawAppend('__proto__ top level', '{"messages":[{"role":"user","content":"a"}],"__proto__":{"expectedCount":5}}');
  await rawAppend('constructor top level', '{"messages":[{"role":"user","content":"a"}],"constructor":{}}', {}, status(400));

  // ---- strings: lone surrogates, invalid UTF-8, BOM ----
  const lone = await rawAppend('lone high surrogate escaped', '{"messages":[{"role":"user","content":"a\\ud800b"}]}');
  if (lone.r.status === 200) {
    const back = await api.page(lone.id);
    const got = back.json?.messages?.[0]?.content;
    console.log(`     lone surrogate read back: ${JSON.stringify(got)} (${back.text.slice(0, 120)})`);
    if (got !== 'a\ud800b') flagged.push('FLAG lone surrogate not read back verbatim');
  }
  await rawAppend(
    'lone low surrogate raw CESU bytes',
    Buffer.concat([Buffer.from('{"messages":[{"role":"user","content":"'), Buffer.from([0xed, 0xb0, 0x80]), Buffer.from('"}]}')]),
    {},
    status(400),
  );
  await rawAppend(
    'invalid utf8 0xff',
    Buffer.concat([Buffer.from('{"messages":[{"role":"user","content":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}]}')]),
    {},
    status(400),
  );
  await rawAppend(
    'overlong utf8',
    Buffer.concat([Buffer.from('{"messages":[{"role":"user","content":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}]}')]),
    {},
    status(400),
  );
  await rawAppend(
    'truncated utf8 at end',
    Buffer.concat([Buffer.from('{"messages":[{"role":"user","content":"x"}]} '), Buffer.from([0xe2, 0x82])]),
    {},
    status(400),
  );
  await rawAppend(
    'BOM prefix',
    Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"messages":[{"role":"user","content":"x"}]}')]),
  );
  await rawAppend('NUL in body outside string', '{"messages":[{"role":"user","content":"x"}]}\u0000', {}, status(400));
  // create with lone surrogate in source and metadata
  {
    const r = await raw(base, {
      method: 'POST',
      path: '/sessions',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{"source":"s\\ud800","metadata":{"k\\udfff":"v\\ud800"}}',
    });
    show('create lone surrogate source/metadata', r);
    if (r.status === 201) {
      const id = r.json.session.sessionId;
      const g = await api.get(id);
      console.log(`     source=${JSON.stringify(g.json?.session?.source)} metadata=${JSON.stringify(g.json?.session?.metadata)}`);
      if (g.json?.session?.source !== 's\ud800')
        flagged.push(`FLAG source lone surrogate read back as ${JSON.stringify(g.json?.session?.source)}`);
    }
  }

  // ---- content-type / charset ----
  for (const ct of [
    'application/json; charset=utf-8',
    'application/json;charset="UTF-8"',
    'APPLICATION/JSON',
    'application/json; charset=latin1',
    'text/plain',
    'application/json-patch+json',
    'application/jsonx',
    'application/json; charset=utf-16',
    'application/json, text/plain',
    'application/json; charset=utf-8; charset=latin1',
  ]) {
    await rawAppend(`content-type ${ct}`, '{"messages":[{"role":"user","content":"x"}]}', { 'content-type': ct });
  }
  {
    const id = await fresh();
    const r = await raw(base, {
      method: 'POST',
      path: `/sessions/${id}/messages`,
      headers: { authorization: `Bearer ${key}` },
      body: '{"messages":[{"role":"user","content":"x"}]}',
    });
    show('no content-type', r, status(415));
  }

  // ---- Idempotency-Key edge cases ----
  for (const k of ['', ' ', 'a'.repeat(255), 'a'.repeat(256), 'k\u00e9', 'tab\tkey', 'a b c', '%00', '  padded  ']) {
    const id = await fresh();
    const h = { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': k };
    let r: Reply;
    try {
      r = await raw(base, {
        method: 'POST',
        path: `/sessions/${id}/messages`,
        headers: h,
        body: '{"messages":[{"role":"user","content":"x"}]}',
      });
    } catch (e) {
      console.log(`     idempotency key ${JSON.stringify(k.slice(0, 20))}: client refused (${String(e)})`);
      continue;
    }
    show(`idempotency key ${JSON.stringify(k.slice(0, 20))}(${k.length})`, r);
    if (r.status === 200) {
      const r2 = await raw(base, {
        method: 'POST',
        path: `/sessions/${id}/messages`,
        headers: h,
        body: '{"messages":[{"role":"user","content":"x"}]}',
      });
      const cnt = (await api.get(id)).json?.session?.messageCount;
      if (cnt !== 1)
        flagged.push(
          `FLAG idempotency key ${JSON.stringify(k)} replay appended twice (count ${cnt}, second ${r2.status} replayed=${r2.headers['idempotent-replayed']})`,
        );
    }
  }
  // Same key, whitespace-different body
  {
    const id = await fresh();
    const h = { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'ws' };
    const a = await raw(base, {
      method: 'POST',
      path: `/sessions/${id}/messages`,
      headers: h,
      body: '{"messages":[{"role":"user","content":"x"}]}',
    });
    const b = await raw(base, {
      method: 'POST',
      path: `/sessions/${id}/messages`,
      headers: h,
      body: '{ "messages": [ {"role":"user","content":"x"} ] }',
    });
    console.log(`     same key, reformatted body: ${a.status} then ${b.status} ${b.json?.error?.code ?? ''}`);
  }
  // same key two sessions
  {
    const s1 = await fresh();
    const s2 = await fresh();
    const h = { 'idempotency-key': 'shared-k' };
    const a = await api.append(s1, [{ role: 'user', content: 'x' }], {}, h);
    const b = await api.append(s2, [{ role: 'user', content: 'x' }], {}, h);
    show('same key other session', b, status(200));
    if (b.headers['idempotent-replayed']) flagged.push('FLAG key replayed across sessions');
    void a;
  }
  // create idempotency: same key, different body → 422; same body → same session
  {
    const h = { 'idempotency-key': `create-${Date.now()}` };
    const a = await api.create({ source: 'a' }, h);
    const b = await api.create({ source: 'a' }, h);
    const c = await api.create({ source: 'b' }, h);
    show('create replay', b, (r) =>
      r.json?.session?.sessionId === a.json?.session?.sessionId ? undefined : 'different session on replay',
    );
    show('create key reused', c, status(422));
  }

  // ---- content-length lies ----
  {
    const id = await fresh();
    const body = '{"messages":[{"role":"user","content":"x"}]}';
    const r1 = await raw(base, {
      method: 'POST',
      path: `/sessions/${id}/messages`,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': String(body.length - 5) },
      body,
      timeoutMs: 10_000,
    });
    show('content-length short', r1);
    const r2 = await raw(base, {
      method: 'POST',
      path: `/sessions/${id}/messages`,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': '99999999' },
      body,
      timeoutMs: 10_000,
    });
    show('content-length huge', r2);
    const r3 = await raw(base, {
      method: 'POST',
      path: `/sessions/${id}/messages`,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      body: `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
      timeoutMs: 10_000,
    });
    show('chunked', r3);
  }
  // body > 1 MiB
  await rawAppend('body 1.2MiB', JSON.stringify({ messages: [{ role: 'user', content: 'z'.repeat(1_250_000) }] }), {}, status(413));
  await rawAppend(
    '99 items',
    JSON.stringify({ messages: Array.from({ length: 99 }, () => ({ role: 'user', content: 'x' })) }),
    {},
    status(400),
  );
  await rawAppend(
    '98 items of 10KB',
    JSON.stringify({ messages: Array.from({ length: 98 }, () => ({ role: 'user', content: 'x'.repeat(10_000) })) }),
    {},
    status(200, 413),
  );
  await rawAppend('empty messages', '{"messages":[]}', {}, status(400));
  await rawAppend('body null', 'null', {}, status(400));
  await rawAppend('body false', 'false', {}, status(400));
  await rawAppend('body 0', '0', {}, status(400));
  await rawAppend('body ""', '""', {}, status(400));
  await rawAppend('body []', '[]', {}, status(400));
  await rawAppend('body whitespace', '   ', {}, status(400));

  // ---- query strings ----
  const pid = await fresh();
  await api.append(
    pid,
    Array.from({ length: 5 }, (_, i) => ({ role: 'user', content: `m${i}` })),
  );
  for (const q of [
    'limit=0',
    'limit=1001',
    'limit=-1',
    'limit=1.5',
    'limit=abc',
    'limit=',
    'limit=1&limit=2',
    'tail=0',
    'tail=3',
    'tail=3&limit=2',
    'tail=3&cursor=x',
    'cursor=',
    'cursor=%00',
    'cursor=' + 'A'.repeat(201),
    'foo=bar',
    'limit=00001',
    'limit=1e2',
    'tail=9999999',
    'limit=%31',
    'limit=2&cursor=eyJ2IjoxfQ',
    '__proto__=1',
    'constructor=1',
    'limit=+1',
    'limit=%201',
  ]) {
    const r = await api.call('GET', `/sessions/${pid}/messages?${q}`);
    show(`query ${q.slice(0, 40)}`, r);
  }
  // forged cursors
  const first = await api.page(pid, 'limit=2');
  const cur = first.json?.nextCursor as string;
  const dec = JSON.parse(Buffer.from(cur, 'base64url').toString());
  console.log(`     cursor: ${JSON.stringify(dec)}`);
  const forge = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  for (const [n, c] of [
    ['afterSeq -1', forge({ ...dec, a: -1 })],
    ['afterSeq huge', forge({ ...dec, a: 1e15 })],
    ['generation 99', forge({ ...dec, g: 99 })],
    ['other session binding', forge({ ...dec, s: 'xxxxxxxxxx' })],
    ['v 2', forge({ ...dec, v: 2 })],
    ['a float', forge({ ...dec, a: 1.5 })],
    ['a string', forge({ ...dec, a: '1' })],
    ['proto', Buffer.from(`{"__proto__":{"v":1},"s":"${dec.s}","g":0,"a":0}`).toString('base64url')],
    ['base64 std chars', cur.replace(/-/g, '+')],
    ['cursor of other session', ''],
  ] as [string, string][]) {
    let c2 = c;
    if (n === 'cursor of other session') {
      const other = await fresh();
      await api.append(other, [
        { role: 'user', content: '1' },
        { role: 'user', content: '2' },
        { role: 'user', content: '3' },
      ]);
      c2 = (await api.page(other, 'limit=1')).json.nextCursor;
    }
    const r = await api.call('GET', `/sessions/${pid}/messages?cursor=${encodeURIComponent(c2)}`);
    show(`cursor ${n}`, r, n === 'afterSeq huge' || n === 'generation 99' ? undefined : status(400));
  }

  // ---- paths & methods ----
  for (const [m, p] of [
    ['GET', `/sessions/${pid}/`],
    ['GET', `/sessions/${pid}//messages`],
    ['GET', `/sessions/${encodeURIComponent(pid + '#S#x')}`],
    ['GET', `/sessions/%2e%2e`],
    ['GET', `/sessions/..%2f..%2fAPIKEYS`],
    ['GET', `/sessions/${'a'.repeat(129)}`],
    ['GET', `/sessions/${pid}%00`],
    ['GET', `/sessions/${pid}/messages/last`],
    ['PUT', `/sessions/${pid}`],
    ['PATCH', `/sessions/${pid}/messages`],
    ['OPTIONS', `/sessions`],
    ['HEAD', `/sessions/${pid}`],
    ['TRACE', `/sessions`],
    ['get', `/sessions/${pid}`],
    ['POST', `/sessions/${pid}/messages/`],
    ['GET', `/SESSIONS/${pid}`],
    ['DELETE', `/sessions/${pid}/messages/last/`],
    ['POST', `/sessions/${pid}/compress?mode=rotate`],
    ['GET', `/sessions/${pid}?x=%E0%A4%A`],
    ['GET', `/`],
  ] as [string, string][]) {
    const r = await api.call(m, p);
    show(`${m} ${p.slice(0, 70)}`, r);
  }

  // ---- auth ----
  for (const h of [
    '',
    'Bearer',
    'Bearer ',
    `bearer ${key}`,
    `Bearer  ${key}  `,
    `Basic ${key}`,
    `Bearer ${key}x`,
    `Bearer ${key} extra`,
    `Bearer ${'x'.repeat(10000)}`,
  ]) {
    const r = await raw(base, { method: 'GET', path: `/sessions/${pid}`, headers: { authorization: h } });
    show(`auth ${JSON.stringify(h.slice(0, 30))}`, r);
  }

  // ---- compress body ----
  for (const b of [
    '{"mode":"fork"}',
    '{"origin":"Review"}',
    '{"keepLast":-1}',
    '{"keepLast":1001}',
    '{"keepLast":1.5}',
    '{"keepLast":"3"}',
    '{"extra":1}',
    'null',
    '[]',
    '{"mode":null}',
  ]) {
    const r = await raw(base, {
      method: 'POST',
      path: `/sessions/${pid}/compress`,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: b,
    });
    show(`compress ${b}`, r, status(400));
  }
  {
    const r = await raw(base, { method: 'POST', path: `/sessions/${pid}/compress`, headers: { authorization: `Bearer ${key}` } });
    show('compress no body', r, status(200));
  }
  {
    const r = await api.compress('00000000-0000-0000-0000-000000000000', { mode: 'rotate' });
    show('compress unknown session', r, status(404));
    const r2 = await api.compress('00000000-0000-0000-0000-000000000000', { mode: 'rotate', origin: 'review' });
    show('compress unknown session review', r2, status(404));
  }

  // ---- metadata ----
  for (const [n, body] of [
    ['metadata array', '{"metadata":[1]}'],
    ['metadata null', '{"metadata":null}'],
    ['metadata __proto__', '{"metadata":{"__proto__":{"x":1}}}'],
    ['metadata empty key', '{"metadata":{"":1}}'],
    ['metadata deep 17', `{"metadata":${'{"a":'.repeat(17)}1${'}'.repeat(17)}}`],
    ['metadata key 257', `{"metadata":{"${'k'.repeat(257)}":1}}`],
    ['metadata 17KB', `{"metadata":{"k":"${'v'.repeat(17000)}"}}`],
    ['source empty', '{"source":""}'],
    ['source 201', `{"source":"${'s'.repeat(201)}"}`],
    ['format bogus', '{"format":"xml"}'],
    ['format null', '{"format":null}'],
    ['unknown field', '{"sessionId":"mine"}'],
  ] as [string, string][]) {
    const r = await raw(base, {
      method: 'POST',
      path: '/sessions',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
    });
    show(`create ${n}`, r);
    if (r.status === 201 && n === 'metadata __proto__') {
      const g = await api.get(r.json.session.sessionId);
      console.log(`     metadata back: ${g.text.slice(0, 300)}`);
      if (JSON.stringify(g.json?.session?.metadata) !== '{"__proto__":{"x":1}}')
        flagged.push(`FLAG metadata __proto__ read back as ${JSON.stringify(g.json?.session?.metadata)}`);
    }
  }

  console.log(`\n${cases} cases, ${flagged.length} flagged`);
  for (const f of flagged) console.log(f);
}

await main();
