// Redis nodes this test owns (never the shared ones): SIGKILL one, restart it on the same
// port so the clients' background reconnect brings it back into the quorum.
import type { Redis } from 'ioredis';
import { createRedisClients, waitForRedis } from '../../../lib/aws-clients.js';
import { startRedis, type LocalProcess } from '../../../infra/local/processes.js';

export interface OwnRedisNodes {
  readonly urls: string[];
  readonly clients: Redis[];
  readonly processes: LocalProcess[];
  kill(i: number, signal?: NodeJS.Signals): Promise<void>;
  restart(i: number): Promise<void>;
  /** Resolves once every client reports ready again (after a restart). */
  ready(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startOwnRedisNodes(n: number): Promise<OwnRedisNodes> {
  const processes = await Promise.all(Array.from({ length: n }, () => startRedis()));
  const urls = processes.map((p) => p.url);
  const clients = createRedisClients(urls, { connectTimeoutMs: 500 });
  await waitForRedis(clients);
  const nodes: OwnRedisNodes = {
    urls,
    clients,
    processes,
    async kill(i, signal = 'SIGKILL') {
      await processes[i]!.stop(signal);
    },
    async restart(i) {
      processes[i] = await startRedis(processes[i]!.port);
    },
    async ready(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!clients.every((c) => c.status === 'ready')) {
        if (Date.now() > deadline) throw new Error(`redis clients not ready: ${clients.map((c) => c.status).join(',')}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async stop() {
      for (const c of clients) c.disconnect();
      await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    },
  };
  return nodes;
}
