/* eslint-disable @typescript-eslint/no-explicit-any -- ad-hoc attack tooling over untyped JSON replies */
// Small raw-HTTP helpers for the adversarial tools (not part of the suite). Every request goes
// to 127.0.0.1 only, with a timeout, and returns status, headers and the parsed body (or text).
import { request as httpRequest } from 'node:http';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
  ms: number;
  /** Transport failure (connection refused, reset, timeout) instead of a response. */
  error?: string;
}

export interface RawOptions {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  timeoutMs?: number;
  /** Send exactly these header lines (lets a test lie about content-length). */
  rawHeaders?: boolean;
}

export function baseOf(url: string): { host: string; port: number } {
  const u = new URL(url);
  if (u.hostname !== '127.0.0.1') throw new Error(`refusing to send traffic to ${u.hostname}`);
  return { host: u.hostname, port: Number(u.port) };
}

export function raw(base: string, opts: RawOptions): Promise<Reply> {
  const { host, port } = baseOf(base);
  const started = Date.now();
  return new Promise((resolve) => {
    const body = opts.body === undefined ? undefined : Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(opts.body, 'utf8');
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (body && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-length')) headers['content-length'] = String(body.length);
    const req = httpRequest(
      { host, port, method: opts.method ?? 'GET', path: opts.path, headers, timeout: opts.timeoutMs ?? 60_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: any;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json, ms: Date.now() - started });
        });
        res.on('error', (e) => resolve({ status: 0, headers: {}, text: '', json: undefined, ms: Date.now() - started, error: String(e) }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('client timeout')));
    req.on('error', (e) => resolve({ status: 0, headers: {}, text: '', json: undefined, ms: Date.now() - started, error: String(e) }));
    if (body) req.write(body);
    req.end();
  });
}

export class Api {
  constructor(
    readonly base: string,
    readonly key: string,
  ) {}

  call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, timeoutMs?: number): Promise<Reply> {
    const h: Record<string, string> = { authorization: `Bearer ${this.key}`, ...headers };
    let b: string | undefined;
    if (body !== undefined) {
      b = typeof body === 'string' ? body : JSON.stringify(body);
      if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['content-type'] = 'application/json';
    }
    return raw(this.base, { method, path, headers: h, ...(b !== undefined ? { body: b } : {}), ...(timeoutMs ? { timeoutMs } : {}) });
  }

  create(body: unknown = {}, headers: Record<string, string> = {}) {
    return this.call('POST', '/sessions', body, headers);
  }
  append(id: string, messages: unknown[], extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    return this.call('POST', `/sessions/${id}/messages`, { messages, ...extra }, headers);
  }
  compress(id: string, body: unknown = {}) {
    return this.call('POST', `/sessions/${id}/compress`, body);
  }
  pop(id: string) {
    return this.call('DELETE', `/sessions/${id}/messages/last`);
  }
  del(id: string) {
    return this.call('DELETE', `/sessions/${id}`);
  }
  get(id: string) {
    return this.call('GET', `/sessions/${id}`);
  }
  page(id: string, query = '') {
    return this.call('GET', `/sessions/${id}/messages${query ? `?${query}` : ''}`);
  }
  lineage(id: string) {
    return this.call('GET', `/sessions/${id}/lineage`);
  }
}

/** A 5xx that is not the documented 503 `{error:{code,message}}` + Retry-After. */
export function badServerError(r: Reply): string | undefined {
  if (r.status === 0) return undefined; // transport failures are counted separately
  if (r.status < 500) return undefined;
  const e = r.json?.error;
  const shaped = e && typeof e.code === 'string' && typeof e.message === 'string';
  if (r.status === 503 && shaped && r.headers['retry-after']) return undefined;
  return `${r.status} ${r.text.slice(0, 300)}`;
}
