// Deleting a whole conversation: the API deletes one session per request, and a rotation may
// add a child while we go.
import type { LineageClient } from './client.js';
import { LineageError, NotFoundError } from './errors.js';
import type { LineageEntry } from './types.js';

/**
 * Deletes every session of the chain `id` belongs to, tip first. Read again after each pass: a
 * rotation that committed after the chain was read adds a child, which the next pass finds.
 */
export async function deleteChain(client: LineageClient, id: string): Promise<string[]> {
  const deleted: string[] = [];
  let anchor = id;
  for (let pass = 0; pass < 8; pass++) {
    let chain: LineageEntry[];
    try {
      chain = (await client.lineage(anchor)).chain;
    } catch (err) {
      if (err instanceof NotFoundError) return deleted; // the anchor is gone: someone else cleared it
      throw err;
    }
    const alive = chain.filter((s) => s.deletedAt === undefined).map((s) => s.sessionId);
    // Keep one member (the root, if alive) until the rest are gone, to read the chain from.
    const keep = alive[0];
    if (keep === undefined) return deleted;
    const rest = alive.slice(1).reverse();
    if (rest.length === 0) {
      await deleteIfThere(client, keep, deleted);
      return deleted;
    }
    for (const s of rest) await deleteIfThere(client, s, deleted);
    anchor = keep;
  }
  throw new LineageError(`session ${id}: its chain kept growing while it was being deleted`);
}

async function deleteIfThere(client: LineageClient, id: string, deleted: string[]): Promise<void> {
  try {
    await client.deleteSession(id);
    deleted.push(id);
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
}
