// npm start's control endpoint: a loopback-only HTTP server whose address goes into the stack file,
// so `npm run stack -- restart <node>` (infra/local/stack-cli.ts) can ask the running npm start to
// start a dead Redis node again. npm start owns every process it runs (it stops them on Ctrl-C), so
// the restart happens inside it rather than in the short-lived command.
import { createServer, type Server } from 'node:http';

export interface RestartedNode {
  name: string;
  url: string;
  pid: number;
}

export interface ControlHandlers {
  restartRedis(name: string): Promise<RestartedNode>;
}

export interface ControlServer {
  readonly url: string;
  close(): Promise<void>;
}

/** A refusal the caller should see as is (node running, unknown node): 409 rather than 500. */
export class ControlRefusal extends Error {}

export async function startControlServer(handlers: ControlHandlers): Promise<ControlServer> {
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method !== 'POST' || url.pathname !== '/redis/restart') return send(404, { error: 'POST /redis/restart?node=<name>' });
    const name = url.searchParams.get('node') ?? '';
    handlers.restartRedis(name).then(
      (node) => send(200, node),
      (err: unknown) => send(err instanceof ControlRefusal ? 409 : 500, { error: err instanceof Error ? err.message : String(err) }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('control server has no port');
  return {
    url: `http://127.0.0.1:${addr.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Client side: asks the npm start behind `controlUrl` to restart `name`; rejects with its reason. */
export async function requestRedisRestart(controlUrl: string, name: string): Promise<RestartedNode> {
  const res = await fetch(`${controlUrl}/redis/restart?node=${encodeURIComponent(name)}`, {
    method: 'POST',
    signal: AbortSignal.timeout(30_000),
  });
  const body = (await res.json()) as RestartedNode | { error: string };
  if (!res.ok || 'error' in body) throw new Error('error' in body ? body.error : `HTTP ${res.status}`);
  return body;
}
