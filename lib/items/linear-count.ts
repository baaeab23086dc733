// Token counting that stays linear in the input's length (issue 11, defect 3).
//
// What is actually true of o200k_base and gpt-tokenizer 3.4.0:
// - The pre-tokenizer regex splits text into pieces (a word with its leading space or
//   punctuation char, 1-3 digits, a punctuation run, a whitespace run) and BPE runs on each
//   piece alone: merges never span a piece boundary. It splits letter runs only at case changes
//   and at non-letters, so a run of lowercase letters (or of CJK characters, or of one
//   punctuation mark, or of whitespace) is ONE piece however long it is.
// - gpt-tokenizer's BPE on one piece is quadratic (each merge rescans and splices the piece):
//   80 K letters take seconds, 370 K more than a minute.
// So: pieces up to MAX_PIECE_CHARS are counted exactly as the library counts them; a longer
// piece is counted in chunks of MAX_PIECE_CHARS. That forbids merges across each chunk
// boundary, so a chunked piece is off by a few tokens per boundary (measured: 0 to +2 per
// 1 K chunk on random letters, see the test). Everyday text has no piece that long (the one
// realistic exception, CJK prose with no punctuation for 1 K characters, is off by about one
// token per chunk), and the rest of a text stays exact: it is only ever cut at the regex's own
// piece boundaries.
export const MAX_PIECE_CHARS = 1024;

/**
 * A cheap scan for whether `text` can hold a piece longer than MAX_PIECE_CHARS. A piece is at
 * most one char + a run of letters/marks + a 3-char contraction, a run of punctuation and line
 * breaks with one leading space, or a whitespace run; a run shorter than SUSPECT_RUN in every
 * class rules it out. Non-ASCII characters count as letter-or-punctuation (unless a Unicode
 * space), so prose in any script without long unbroken runs skips the regex pass.
 */
const SUSPECT_RUN = MAX_PIECE_CHARS / 2;
const LETTER = 1;
const PUNCT = 2;
const SPACE = 4;
const ASCII_CLASS = new Uint8Array(128).map((_, c) => {
  if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122)) return LETTER;
  if (c >= 48 && c <= 57) return 0;
  if (c === 10 || c === 13) return SPACE | PUNCT; // line breaks may trail a punctuation piece
  if (c === 32 || (c >= 9 && c <= 13)) return SPACE;
  return PUNCT;
});
const UNICODE_SPACES = new Set([0x85, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff]);

function classOf(code: number): number {
  if (code < 128) return ASCII_CLASS[code]!;
  if (UNICODE_SPACES.has(code) || (code >= 0x2000 && code <= 0x200a)) return SPACE;
  return LETTER | PUNCT;
}

export function mayHoldLongPiece(text: string): boolean {
  if (text.length <= MAX_PIECE_CHARS) return false;
  let letters = 0;
  let punct = 0;
  let spaces = 0;
  for (let i = 0; i < text.length; i++) {
    const cls = classOf(text.charCodeAt(i));
    letters = cls & LETTER ? letters + 1 : 0;
    punct = cls & PUNCT ? punct + 1 : 0;
    spaces = cls & SPACE ? spaces + 1 : 0;
    if (letters >= SUSPECT_RUN || punct >= SUSPECT_RUN || spaces >= SUSPECT_RUN) return true;
  }
  return false;
}

/**
 * `count` (the library's exact counter) applied so that no call sees a piece longer than
 * MAX_PIECE_CHARS. `pieces` is the encoding's own pre-tokenizer regex (global, unicode).
 */
export function countLinear(text: string, count: (text: string) => number, pieces: RegExp): number {
  if (!mayHoldLongPiece(text)) return count(text);
  let total = 0;
  let spanStart = 0;
  for (const match of text.matchAll(pieces)) {
    const piece = match[0];
    if (piece.length <= MAX_PIECE_CHARS) continue;
    // Cutting at a piece boundary: the regex finds the same pieces on either side, so this is exact.
    if (match.index > spanStart) total += count(text.slice(spanStart, match.index));
    total += countInChunks(piece, count);
    spanStart = match.index + piece.length;
  }
  if (spanStart < text.length) total += count(spanStart === 0 ? text : text.slice(spanStart));
  return total;
}

function countInChunks(piece: string, count: (text: string) => number): number {
  let total = 0;
  for (let start = 0; start < piece.length;) {
    let end = Math.min(start + MAX_PIECE_CHARS, piece.length);
    const last = piece.charCodeAt(end - 1);
    if (end < piece.length && last >= 0xd800 && last <= 0xdbff) end++; // never split a surrogate pair
    total += count(piece.slice(start, end));
    start = end;
  }
  return total;
}

/**
 * Texts up to this long are counted as above (exact but for chunked long pieces). A longer one
 * (a base64 file or screenshot in a tool call, a pasted log) is counted from SAMPLE_WINDOWS
 * evenly spaced windows and scaled by its length: dense data costs the tokenizer about 2 µs a
 * character, so 360 KB of base64 took 0.7 s here (seconds on a Lambda's share of a CPU, with
 * the lease refresher and the time checks unable to run meanwhile). Off by about 1% on uniform
 * text, a few percent on text that changes kind (measured in test/unit/items/tokens.test.ts).
 */
export const EXACT_TEXT_CHARS = 65_536;
const SAMPLE_WINDOWS = 64;
const WINDOW_CHARS = EXACT_TEXT_CHARS / SAMPLE_WINDOWS;

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/** countLinear for texts up to EXACT_TEXT_CHARS; sampled and scaled past it (bounded cost per text). */
export function countBounded(text: string, count: (text: string) => number, pieces: RegExp): number {
  if (text.length <= EXACT_TEXT_CHARS) return countLinear(text, count, pieces);
  let tokens = 0;
  let chars = 0;
  for (let i = 0; i < SAMPLE_WINDOWS; i++) {
    let start = Math.floor((i * (text.length - WINDOW_CHARS)) / (SAMPLE_WINDOWS - 1));
    let end = start + WINDOW_CHARS;
    if (isLowSurrogate(text.charCodeAt(start))) start++; // never split a surrogate pair
    if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end++;
    const window = text.slice(start, end);
    tokens += countLinear(window, count, pieces);
    chars += window.length;
  }
  return Math.round((tokens * text.length) / chars);
}
