// openapi-fetch's createClient, as much of it as this client uses (issue 30: the bundle's size
// goal): the same requests and answers, typed by openapi-fetch's own `Client` (a type only, so
// none of its code is bundled): path parameters encoded, primitive query parameters (`k=v`, null
// and undefined left out), headers merged (the client's, the call's, `params.header`; an undefined
// value sets none), a JSON body (or the call's serializer) with its content type, one `Request`
// given to `fetch`, and the answer read as openapi-fetch reads it: no body for 204 or an empty
// one, JSON for a 2xx (a SyntaxError on anything else), an error body parsed when it is JSON.
import type { Client } from 'openapi-fetch';

type Values = Record<string, string | number | boolean | null | undefined>;
interface Init {
  params?: { path?: Values; query?: Values; header?: Values };
  headers?: Values;
  body?: unknown;
  bodySerializer?: (body: unknown) => string;
  signal?: AbortSignal;
  /** 'text': a 2xx body as it came (the NDJSON export), as openapi-fetch's parseAs. */
  parseAs?: 'text';
}

export default function createClient<P extends object>(opts: {
  baseUrl: string;
  headers: Values;
  fetch?: (request: Request) => Promise<Response>;
}): Client<P> {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const request = async (
    method: string,
    path: string,
    { params = {}, headers, body, bodySerializer = JSON.stringify, signal, parseAs }: Init,
  ) => {
    const query = Object.entries(params.query ?? {})
      .filter(([, v]) => v != null)
      .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
      .join('&');
    const url =
      base + path.replace(/\{([^{}]+)\}/g, (_, k: string) => encodeURIComponent(String(params.path![k]))) + (query && `?${query}`);
    const sent = body === undefined ? undefined : bodySerializer(body);
    const merged = new Headers(sent === undefined ? {} : { 'Content-Type': 'application/json' });
    for (const h of [opts.headers, headers, params.header])
      for (const [k, v] of Object.entries(h ?? {})) if (v != null) merged.set(k, String(v));
    const req = new Request(url, { redirect: 'follow', method, body: sent ?? null, headers: merged, signal: signal ?? null });
    const response = await (opts.fetch ?? globalThis.fetch)(req);
    const length = response.headers.get('Content-Length');
    if (response.status === 204 || (length === '0' && !response.headers.get('Transfer-Encoding')?.includes('chunked'))) return { response };
    const text = await response.text();
    if (response.ok) return { data: parseAs ? text : text ? (JSON.parse(text) as unknown) : undefined, response };
    try {
      return { error: JSON.parse(text) as unknown, response };
    } catch {
      return { error: text, response };
    }
  };
  return {
    request,
    POST: (path: string, init: Init) => request('POST', path, init),
    PUT: (path: string, init: Init) => request('PUT', path, init),
  } as unknown as Client<P>;
}
