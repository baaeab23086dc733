// Issue 22 finding 6: what refusing a hostile body costs. A 1 MB append body of 330,000 numbers
// goes through what the HTTP API does before any store call (parseJsonBody: UTF-8, JSON.parse,
// depth, exact numbers; then the append schema, which refuses it for its item count). CPU time
// (process.cpuUsage, user + system), median of the runs, side by side with a bare JSON.parse
// of the same text. Runs alone with `tsx bench/json-body-bench.ts`.
import { pathToFileURL } from 'node:url';
import { parseJsonBody } from '../lib/api/json-body.js';
import { appendBody, parseWith } from '../lib/api/schemas.js';

export const JSON_BODY_REFUSAL_TARGET_MS = 50;

export interface JsonBodyBenchResult {
  bytes: number;
  numbers: number;
  /** Median CPU ms to refuse the body through the API's checks. */
  refuseCpuMs: number;
  /** Median CPU ms of JSON.parse alone on the same text. */
  bareParseCpuMs: number;
  ratio: number;
  refusedWith: string;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function cpuMs(f: () => void): number {
  const t = process.cpuUsage();
  f();
  const u = process.cpuUsage(t);
  return (u.user + u.system) / 1000;
}

/** `{"messages":[...]}` of `count` two-digit numbers with a few decimals among them: about 1 MB. */
export function numbersBody(count = 330_000): Buffer {
  const nums = Array.from({ length: count }, (_, i) => (i % 10 === 0 ? (i % 97) + 0.25 : i % 97));
  return Buffer.from(JSON.stringify({ messages: nums }));
}

export function benchJsonBody(runs: number): JsonBodyBenchResult {
  const body = numbersBody();
  const text = body.toString('utf8');
  let refusedWith = 'accepted';
  const refuse = () => {
    try {
      const value = parseJsonBody({ body, contentType: 'application/json', declaredLength: body.length }, 8 << 20);
      parseWith(appendBody, value, 'body');
    } catch (err) {
      refusedWith = (err as { code?: string }).code ?? String(err);
    }
  };
  // Warm both paths (JIT) before measuring.
  for (let i = 0; i < 3; i++) {
    refuse();
    JSON.parse(text);
  }
  const refuseMs: number[] = [];
  const bareMs: number[] = [];
  for (let i = 0; i < Math.max(5, runs); i++) {
    refuseMs.push(cpuMs(refuse));
    bareMs.push(cpuMs(() => JSON.parse(text)));
  }
  const refuseCpuMs = Math.round(median(refuseMs) * 10) / 10;
  const bareParseCpuMs = Math.round(median(bareMs) * 10) / 10;
  return {
    bytes: body.length,
    numbers: 330_000,
    refuseCpuMs,
    bareParseCpuMs,
    ratio: Math.round((refuseCpuMs / bareParseCpuMs) * 100) / 100,
    refusedWith,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) console.log(benchJsonBody(15));
