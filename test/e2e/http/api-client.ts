// Small HTTP client for the e2e tests, plus validation of responses against the
// schemas documented in functions/openapi.json (OpenAPI 3.1 = JSON Schema 2020-12).
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
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
}

export function apiClient(baseUrl: string, defaultKey: string) {
  return async function call(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = {};
    const key = opts.key === undefined ? defaultKey : opts.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    let body: string | undefined;
    if (opts.rawBody !== undefined) body = opts.rawBody;
    else if (opts.body !== undefined) body = JSON.stringify(opts.body);
    const contentType = opts.contentType === undefined ? (body !== undefined ? 'application/json' : null) : opts.contentType;
    if (contentType !== null) headers['content-type'] = contentType;
    const res = await fetch(baseUrl + path, { method, headers, ...(body !== undefined ? { body } : {}), signal: AbortSignal.timeout(60_000) });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // keep the raw text; the test's expectations will show it
    }
    return { status: res.status, headers: res.headers, body: parsed };
  };
}

const doc = JSON.parse(readFileSync(new URL('../../../functions/openapi.json', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, { responses: Record<string, { $ref?: string; content?: Record<string, { schema: unknown }> }> }>>;
  components: { responses: Record<string, { content: Record<string, { schema: unknown }> }> };
};
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ $id: 'openapi', components: doc.components }, 'openapi');

function documentedSchema(method: string, template: string, status: number): unknown {
  const op = doc.paths[template]?.[method.toLowerCase()];
  if (!op) throw new Error(`${method} ${template} is not documented`);
  let response = op.responses[String(status)];
  if (!response) throw new Error(`${method} ${template} does not document status ${status}`);
  if (response.$ref) response = doc.components.responses[response.$ref.split('/').at(-1)!]!;
  const schema = response.content?.['application/json']?.schema;
  if (!schema) throw new Error(`${method} ${template} ${status} has no JSON schema`);
  // Resolve #/components/... refs against the registered document.
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/'));
}

/** Asserts the response body matches the schema the OpenAPI document gives for (method, route, status). */
export function expectDocumented(res: ApiResponse, method: string, template: string): void {
  const validate = ajv.compile(documentedSchema(method, template, res.status) as object);
  const ok = validate(res.body);
  expect(ok ? [] : validate.errors, `${method} ${template} ${res.status}: ${JSON.stringify(res.body).slice(0, 500)}`).toEqual([]);
}
