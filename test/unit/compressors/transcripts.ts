// Sample chat agent transcripts for the compressor tests.
import type { Item } from '../../../lib/items/types.js';

export function toolCall(
  id: string,
  name: string,
  args: unknown = {},
): { id: string; type: 'function'; function: { name: string; arguments: string } } {
  return { id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
}

/** A coding-agent session: system prompt, a request, a long middle with tools and tasks, a recent tail. */
export function agentSession(): Item[] {
  return [
    { role: 'system', content: 'You are a careful coding agent working in the repo acme/billing.' },
    { role: 'user', content: 'The nightly invoice export fails since Tuesday. Please find out why and fix it.' },
    {
      role: 'assistant',
      content: 'I will look at the export job first.',
      tool_calls: [toolCall('c1', 'read_file', { path: 'jobs/export.ts' })],
    },
    { role: 'tool', tool_call_id: 'c1', content: 'export async function run() {\n  // TODO: this is code, not a task for the agent\n}' },
    {
      role: 'assistant',
      content:
        'Found it: the export fails because the S3 bucket policy was changed on Tuesday. We decided to use the new bucket invoices-v2 instead of restoring the policy.\n\nNext steps:\n- update the bucket name in config/export.json\n- re-run the export for Tuesday and Wednesday\n\n- [ ] tell finance the exports were delayed\n- [ ] add an alarm on export failures',
    },
    { role: 'user', content: 'Sounds good. Also note that the deadline for the fix is Friday.' },
    {
      role: 'assistant',
      content: 'Updating config.',
      tool_calls: [toolCall('c2', 'edit_file', { path: 'config/export.json' }), toolCall('c3', 'run_tests', {})],
    },
    { role: 'tool', tool_call_id: 'c2', content: 'ok' },
    { role: 'tool', tool_call_id: 'c3', content: '42 passed' },
    {
      role: 'assistant',
      content: '- [x] update the bucket name in config/export.json\nTests pass. TODO: clean up the old bucket after a week.',
    },
    { role: 'user', content: 'Great. Run the backfill now please.' },
    { role: 'assistant', content: 'Running the backfill.', tool_calls: [toolCall('c4', 'run_job', { job: 'export', days: 2 })] },
    { role: 'tool', tool_call_id: 'c4', content: 'backfill done: 2 days, 1,204 invoices' },
    { role: 'assistant', content: 'The backfill finished: 1,204 invoices exported.' },
    { role: 'user', content: 'Thanks! What is left?' },
    { role: 'assistant', content: 'Telling finance and adding the alarm are still open.' },
  ];
}

/** A long session: the agent session with its middle repeated `rounds` times with distinct facts. */
export function longSession(rounds: number): Item[] {
  const base = agentSession();
  const middle: Item[] = [];
  for (let r = 0; r < rounds; r++) {
    middle.push(
      { role: 'user', content: `Round ${r}: please check shard ${r} of the ledger for duplicates and report back in detail.` },
      { role: 'assistant', content: `Checking shard ${r}.`, tool_calls: [toolCall(`r${r}`, 'query_ledger', { shard: r })] },
      { role: 'tool', tool_call_id: `r${r}`, content: `shard ${r}: ${'row '.repeat(50)}` },
      {
        role: 'assistant',
        content: `Found ${r + 3} duplicate rows in shard ${r} because the importer retried twice. We decided to keep the earliest row of shard ${r}.\n- [ ] delete the duplicates of shard ${r}`,
      },
    );
  }
  return [...base.slice(0, 2), ...middle, ...base.slice(2)];
}
