// Output: `--json` prints one JSON document on stdout (for scripts); otherwise aligned text
// for people. Prompts, notes and errors go to stderr, so stdout stays parseable either way.
import type { CliIo } from './io.js';

export function emit(io: CliIo, json: boolean | undefined, value: unknown, text: () => string[]): void {
  io.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${text().join('\n')}\n`);
}

export function note(io: CliIo, message: string): void {
  io.stderr.write(`note: ${message}\n`);
}

/** Left-aligned columns, two spaces apart (the last column is not padded). */
export function columns(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

/** "in 12.3 s" / "4.0 s ago" relative to now: lease and attempt expiries are read by the second. */
export function relative(atMs: number, now: number = Date.now()): string {
  const s = Math.abs(atMs - now) / 1000;
  const span = s < 120 ? `${s.toFixed(1)} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3600)} h`;
  return atMs >= now ? `in ${span}` : `${span} ago`;
}

/** A Redis URL without its credentials (the SSM value carries the AUTH token). */
export function redisNodeLabel(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return '<unparseable Redis URL>';
  }
}
