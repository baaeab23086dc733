// Compacting with your own model (SPEC E1-E4, docs/held-compactions.md): two agent processes
// compact one conversation at once with their own compactor. The service's lease lets one
// through; its engine runs while the client heartbeats; another process appends meanwhile; the
// fenced commit carries that append after the replacement. The loser never runs its engine.
// The "model" is deterministic here so CI can check the result (`npm run example:smoke`).
import type { CompactionEngine, CompactWithResult, Item, LineageClient, LineageEntry } from '@session-lineage/client';

export interface OwnCompactorResult {
  conversationId: string;
  outcomes: CompactWithResult[];
  engineCalls: number;
  chain: LineageEntry[];
  transcript: Item[];
  /** What the winner's engine answered, and what another process appended while it ran. */
  replacement: Item[];
  appendedMeanwhile: Item[];
}

/** A stand-in for your model: keeps the first user turn and one summary line naming what it replaced. */
export function deterministicSummary(messages: readonly Item[]): Item[] {
  const firstUser = messages.find((m) => (m as { role?: string }).role === 'user');
  const topics = new Set(messages.map((m) => String((m as { content?: unknown }).content).split(':')[0]));
  return [
    ...(firstUser ? [firstUser] : []),
    { role: 'assistant', content: `Summary of ${messages.length} items: ${[...topics].join(', ')}.` },
  ];
}

export async function runOwnCompactor(client: LineageClient, log: (line: string) => void = console.log): Promise<OwnCompactorResult> {
  const conversationId = `own-compactor-${globalThis.crypto.randomUUID().slice(0, 8)}`;
  await client.putConversation(conversationId, { format: 'chat' });
  const services = ['billing', 'search', 'checkout', 'ledger', 'auth', 'mail'];
  await client.appendToConversation(
    conversationId,
    services.flatMap((s): Item[] => [
      { role: 'user', content: `${s}: why did the ${s} deploy fail last night?` },
      { role: 'assistant', content: `${s}: ${'the migration timed out on a table lock; rerun it with a longer timeout. '.repeat(3)}` },
    ]),
  );
  log(`conversation ${conversationId}: ${services.length * 2} items`);

  let engineCalls = 0;
  let replacement: Item[] = [];
  const appendedMeanwhile: Item[] = [{ role: 'user', content: 'auth: and is the fix deployed yet?' }];
  let release!: () => void;
  const running = new Promise<void>((resolve) => (release = resolve));
  // The engine: your model goes here. It gets the snapshot and a signal that aborts if the lease is lost.
  const engine: CompactionEngine = async ({ messages, signal, attempt }) => {
    engineCalls++;
    log(`engine: summarizing ${messages.length} items (through seq ${attempt.throughSeq}, fence ${attempt.fence})`);
    release();
    // Another process appends while the model works: the commit keeps it (I4).
    await client.appendToConversation(conversationId, appendedMeanwhile);
    signal.throwIfAborted();
    return (replacement = deterministicSummary(messages));
  };

  // Two agents at once: one wins the lease, the other is told `locked` and never calls its engine.
  const first = client.compactWith(conversationId, engine, { mode: 'rotate' });
  await running;
  const second = await client.compactWith(conversationId, engine, { mode: 'rotate' });
  const outcomes = [await first, second];
  for (const o of outcomes) log(`compactWith: ${o.outcome}${o.reason ? `/${o.reason}` : ''}, session ${o.sessionId}`);

  const { chain } = await client.conversationLineage(conversationId);
  const { items: transcript } = await client.readConversation(conversationId);
  log(`chain: ${chain.map((s) => s.sessionId).join(' → ')}; live transcript:`);
  for (const item of transcript) log(`  ${JSON.stringify(item).slice(0, 110)}`);
  return { conversationId, outcomes, engineCalls, chain, transcript, replacement, appendedMeanwhile };
}

/** What the smoke test checks: one engine call, one child, the replacement then the carried append. */
export function checkOwnCompactor(r: OwnCompactorResult): string[] {
  const problems: string[] = [];
  const [winner, loser] = r.outcomes;
  if (winner?.outcome !== 'compressed') problems.push(`the winner answered ${JSON.stringify(winner)}`);
  if (loser?.outcome !== 'skipped' || loser.reason !== 'locked') problems.push(`the loser answered ${JSON.stringify(loser)}`);
  if (r.engineCalls !== 1) problems.push(`the engine ran ${r.engineCalls} times`);
  if (r.chain.length !== 2) problems.push(`expected a root and one child, got ${r.chain.length} sessions`);
  if (JSON.stringify(r.transcript) !== JSON.stringify([...r.replacement, ...r.appendedMeanwhile]))
    problems.push(`the live transcript is not the replacement followed by the append: ${JSON.stringify(r.transcript)}`);
  return problems;
}
