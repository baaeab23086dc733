// An HTTP proxy between a client and the local service that can lose a response after the
// service handled the request (the failure idempotency keys exist for), hold a request back
// until the test has done something, or answer in the service's place.
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  /** 1-based, in arrival order. */
  n: number;
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * What to do with one request:
 * - `forward`: pass it on and its response back;
 * - `drop-response`: pass it on, wait for the service's full answer, then cut the client's
 *   connection without a byte of it (the service applied the request; the client cannot know);
 * - `drop-request`: cut the connection without forwarding (nothing was applied);
 * - `{respond}`: answer in the service's place (status, headers, JSON body), forwarding nothing.
 */
export type ProxyAction =
  'forward' | 'drop-response' | 'drop-request' | { respond: { status: number; headers?: Record<string, string>; body: unknown } };

export interface FaultProxy {
  baseUrl: string;
  seen: SeenRequest[];
  /** Decides per request; may wait (e.g. until the test rotated the session). Default: forward. */
  setRule(rule: (req: SeenRequest) => ProxyAction | Promise<ProxyAction>): void;
  close(): Promise<void>;
}

export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const upstream = new URL(target);
  const seen: SeenRequest[] = [];
  let rule: (req: SeenRequest) => ProxyAction | Promise<ProxyAction> = () => 'forward';

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      res.destroy(err instanceof Error ? err : new Error(String(err)));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const seenReq: SeenRequest = {
      n: seen.length + 1,
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: { ...req.headers },
      body: body.toString('utf8'),
    };
    seen.push(seenReq);
    const action = await rule(seenReq);
    if (action === 'drop-request') {
      req.socket.destroy();
      return;
    }
    if (typeof action === 'object') {
      const text = JSON.stringify(action.respond.body);
      res.writeHead(action.respond.status, { 'content-type': 'application/json', ...action.respond.headers });
      res.end(text);
      return;
    }
    const answer = await forward(seenReq, body);
    if (action === 'drop-response') {
      req.socket.destroy();
      return;
    }
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  }

  function forward(req: SeenRequest, body: Buffer): Promise<{ status: number; headers: Record<string, string | string[]>; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const headers = { ...req.headers, host: upstream.host };
      const out = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.path, headers }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => {
          const h: Record<string, string | string[]> = {};
          for (const [k, v] of Object.entries(res.headers))
            if (v !== undefined && k !== 'transfer-encoding' && k !== 'connection') h[k] = v;
          resolve({ status: res.statusCode ?? 502, headers: h, body: Buffer.concat(parts) });
        });
        res.on('error', reject);
      });
      out.on('error', reject);
      out.end(body);
    });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    seen,
    setRule(r) {
      rule = r;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
