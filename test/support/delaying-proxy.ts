// A TCP proxy in front of one Redis node that can hold the node's replies (issue 22 finding 6,
// L3 late undo): requests go through at once, replies wait while the proxy holds them. The test
// decides when a reply arrives (release()) and can wait for the next request or reply to pass,
// so an interleaving like "the node stored our SET, but its answer arrives after our key expired
// there" is forced without sleeps.
import net from 'node:net';

interface Waiter {
  match: (chunk: Buffer) => boolean;
  resolve: (chunk: Buffer) => void;
}

export class DelayingProxy {
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();
  #holding = false;
  #held: { to: net.Socket; chunk: Buffer }[] = [];
  #requestWaiters: Waiter[] = [];
  #replyWaiters: Waiter[] = [];
  port = 0;

  private constructor(
    readonly upstreamHost: string,
    readonly upstreamPort: number,
  ) {
    this.#server = net.createServer((client) => this.#pipe(client));
  }

  static async start(upstreamUrl: string): Promise<DelayingProxy> {
    const u = new URL(upstreamUrl);
    const proxy = new DelayingProxy(u.hostname, Number(u.port));
    await new Promise<void>((resolve) => proxy.#server.listen(0, '127.0.0.1', resolve));
    proxy.port = (proxy.#server.address() as net.AddressInfo).port;
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** From now on the node's replies wait in the proxy. */
  hold(): void {
    this.#holding = true;
  }

  /** Delivers every held reply, in order, and stops holding. */
  release(): void {
    this.#holding = false;
    for (const { to, chunk } of this.#held.splice(0)) this.#deliver(to, chunk);
  }

  /** Replies held right now. */
  get heldReplies(): number {
    return this.#held.length;
  }

  /** The next request (client → node) whose bytes satisfy `match`. */
  nextRequest(match: (chunk: Buffer) => boolean = () => true): Promise<Buffer> {
    return new Promise((resolve) => this.#requestWaiters.push({ match, resolve }));
  }

  /** The next reply delivered to the client (after release, if held). */
  nextReply(match: (chunk: Buffer) => boolean = () => true): Promise<Buffer> {
    return new Promise((resolve) => this.#replyWaiters.push({ match, resolve }));
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #pipe(client: net.Socket): void {
    const upstream = net.connect(this.upstreamPort, this.upstreamHost);
    this.#sockets.add(client).add(upstream);
    client.on('data', (chunk) => {
      upstream.write(chunk);
      this.#notify(this.#requestWaiters, chunk);
    });
    upstream.on('data', (chunk) => {
      if (this.#holding) this.#held.push({ to: client, chunk });
      else this.#deliver(client, chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.#sockets.delete(client);
      this.#sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  }

  #deliver(to: net.Socket, chunk: Buffer): void {
    to.write(chunk);
    this.#notify(this.#replyWaiters, chunk);
  }

  #notify(waiters: Waiter[], chunk: Buffer): void {
    const i = waiters.findIndex((w) => w.match(chunk));
    if (i >= 0) waiters.splice(i, 1)[0]!.resolve(chunk);
  }
}
