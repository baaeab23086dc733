// Small HTTP client for the e2e tests. Every response it returns has been checked against
// functions/openapi.json (OpenAPI 3.1 = JSON Schema 2020-12): the status must be documented for
// the operation and the body must match its schema; a 503 must carry Retry-After. Requests to
// no documented operation (unknown paths, wrong methods) must still answer the error shape.
import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { expect } from 'vitest';

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from the wire, checked by the tests
}

export interface RequestOptions {
  key?: string | null;
  body?: unknown;
  rawBody?: string;
  contentType?: string | null;
  headers?: Record<string, string>;
}

export type Api = (method: string, path: string, opts?: RequestOptions) => Promise<ApiResponse>;

export function apiClient(baseUrl: string, defaultKey: string): Api {
  return async function call(method, path, opts = {}) {
    const headers: Record<string, string> = { ...opts.headers };
    const key = opts.key === undefined ? defaultKey : opts.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    let body: string | undefined;
    if (opts.rawBody !== undefined) body = opts.rawBody;
    else if (opts.body !== undefined) body = JSON.stringify(opts.body);
    const contentType = opts.contentType === undefined ? (body !== undefined ? 'application/json' : null) : opts.contentType;
    if (contentType !== null) headers['content-type'] = contentType;
    const res = await fetch(baseUrl + path, {
      method,
      headers,
      ...(body !== undefined ? { body } : {}),
      signal: AbortSignal.timeout(90_000),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // keep the raw text; the schema check below shows it
    }
    const out = { status: res.status, headers: res.headers, body: parsed };
    expectDocumented(out, method, path);
    return out;
  };
}

type ResponseDoc = { $ref?: string; content?: Record<string, { schema: unknown }>; headers?: Record<string, unknown> };
const doc = JSON.parse(readFileSync(new URL('../../../functions/openapi.json', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, { responses: Record<string, ResponseDoc> }>>;
  components: { responses: Record<string, ResponseDoc>; schemas: Record<string, unknown> };
};
const ajv = new Ajv2020({ strict: false, allErrors: true });
// The one format the document uses; ajv-formats is not a dependency.
ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
ajv.addSchema({ $id: 'openapi', components: doc.components }, 'openapi');
const compiled = new Map<string, ValidateFunction>();
/** A validator for a schema of the document (its #/components refs resolved against it), compiled once. */
function validatorOf(schema: unknown): ValidateFunction {
  const text = JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/');
  let v = compiled.get(text);
  if (!v) compiled.set(text, (v = ajv.compile(JSON.parse(text) as object)));
  return v;
}

/** The documented path template a concrete path matches (`/sessions/abc/messages` → `/sessions/{id}/messages`). */
export function templateOf(path: string): string | undefined {
  const bare = path.split('?')[0]!;
  return Object.keys(doc.paths).find((t) => new RegExp(`^${t.replace(/\{\w+\}/g, '[^/]+')}$`).test(bare));
}

function documentedResponse(method: string, template: string, status: number): ResponseDoc | undefined {
  const response = doc.paths[template]?.[method.toLowerCase()]?.responses[String(status)];
  return response?.$ref ? doc.components.responses[response.$ref.split('/').at(-1)!] : response;
}

/** Asserts the response is what the OpenAPI document gives for (method, path, status). */
export function expectDocumented(res: ApiResponse, method: string, path: string): void {
  const what = `${method} ${path.slice(0, 120)} ${res.status}: ${JSON.stringify(res.body).slice(0, 500)}`;
  const template = templateOf(path);
  const op = template ? doc.paths[template]?.[method.toLowerCase()] : undefined;
  if (!template || !op) {
    // Not an operation (unknown route, or a known path with another method): our JSON error.
    expect([404, 405], what).toContain(res.status);
    const validate = validatorOf({ $ref: '#/components/schemas/Error' });
    expect(validate(res.body) ? [] : validate.errors, what).toEqual([]);
    return;
  }
  const response = documentedResponse(method, template, res.status);
  expect(response, `${what} (status not documented)`).toBeDefined();
  const schema = response!.content?.['application/json']?.schema;
  if (!schema) {
    expect(res.body, `${what} (documented without a body)`).toBeNull();
    return;
  }
  expect(res.headers.get('content-type'), what).toMatch(/^application\/json/);
  const validate = validatorOf(schema);
  expect(validate(res.body) ? [] : validate.errors, what).toEqual([]);
  if (response!.headers?.['Retry-After']) expect(Number(res.headers.get('retry-after')), `${what} (Retry-After)`).toBeGreaterThanOrEqual(1);
}
