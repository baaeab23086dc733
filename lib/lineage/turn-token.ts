// A turn token (SPEC T3) is `<turnId>.<secret>`: the Turn-Token header alone names the turn and
// proves it. Store-agnostic, so the API reads the header without the store's internals.
import type { TurnCredential } from './types.js';

/** The Turn-Token header as a credential; undefined for something that is not one of ours. */
export function credentialOf(token: string): TurnCredential | undefined {
  const dot = token.indexOf('.');
  if (dot <= 0 || token.length > 200) return undefined;
  return { turnId: token.slice(0, dot), token };
}
