// What Powertools (logs, EMF metrics) wrote while `fn` ran: every JSON line of stdout and
// stderr (error logs go to stderr), parsed, with the other output swallowed.
import { vi } from 'vitest';

export async function jsonLinesWritten<T>(fn: () => Promise<T>): Promise<{ value: T; lines: Record<string, unknown>[] }> {
  const chunks: string[] = [];
  const capture = (chunk: string | Uint8Array) => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  };
  const spies = [
    vi.spyOn(process.stdout, 'write').mockImplementation(capture),
    vi.spyOn(process.stderr, 'write').mockImplementation(capture),
  ];
  try {
    const value = await fn();
    const lines = chunks
      .join('')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    return { value, lines };
  } finally {
    spies.forEach((s) => s.mockRestore());
  }
}
