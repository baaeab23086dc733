// A loopback TCP proxy in front of DynamoDB Local that misbehaves on purpose, for the transport
// faults DynamoDB Local cannot produce: a connection reset before the request arrives, a
// response lost after DynamoDB applied the request, and an endpoint that never answers.
import { connect, createServer, type Server, type Socket } from 'node:net';

export type ProxyFault =
  /** Reset the first connection as soon as its request starts: DynamoDB never sees it. */
  | 'reset-first-request'
  /** Forward the first connection's request, then reset instead of relaying DynamoDB's answer. */
  | 'drop-first-response'
  /** Accept and read, never answer (a stalled or SIGSTOPped DynamoDB). */
  | 'stall'
  | 'none';

export interface FaultyProxy {
  endpoint: string;
  /** Connections accepted, in order. */
  connections: number;
  /** The HTTP request bodies that reached DynamoDB, in order. */
  forwardedBodies: string[];
  close(): Promise<void>;
}

/** Splits a connection's request stream into complete HTTP requests' bodies (DynamoDB requests carry Content-Length). */
function requestParser(onBody: (body: string) => void): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      const headEnd = pending.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = pending.subarray(0, headEnd).toString('latin1');
      const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
      if (pending.length < headEnd + 4 + length) return;
      onBody(pending.subarray(headEnd + 4, headEnd + 4 + length).toString('utf8'));
      pending = pending.subarray(headEnd + 4 + length);
    }
  };
}

export async function startFaultyProxy(upstream: string, fault: ProxyFault): Promise<FaultyProxy> {
  const target = new URL(upstream);
  const sockets = new Set<Socket>();
  const state: FaultyProxy = { endpoint: '', connections: 0, forwardedBodies: [], close: async () => undefined };

  const server: Server = createServer((client) => {
    const n = ++state.connections;
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    if (fault === 'stall') {
      client.resume(); // read and discard: the request is "sent", the answer never comes
      return;
    }
    if (fault === 'reset-first-request' && n === 1) {
      client.once('data', () => client.resetAndDestroy());
      return;
    }
    const up = connect(Number(target.port), target.hostname);
    sockets.add(up);
    up.on('close', () => sockets.delete(up));
    up.on('error', () => client.destroy());
    const parse = requestParser((body) => state.forwardedBodies.push(body));
    client.on('data', (chunk: Buffer) => {
      parse(chunk);
      up.write(chunk);
    });
    client.on('end', () => up.end());
    up.on('data', (chunk: Buffer) => {
      if (fault === 'drop-first-response' && n === 1) {
        // DynamoDB has applied the request; the caller only learns that its connection died.
        client.resetAndDestroy();
        up.destroy();
        return;
      }
      client.write(chunk);
    });
    up.on('end', () => client.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy has no port');
  state.endpoint = `http://127.0.0.1:${address.port}`;
  state.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return state;
}
