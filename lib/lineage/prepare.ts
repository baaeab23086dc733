// The usual AppendInput.prepare: the items as given, each with its token estimate in the
// session's format. The API's own prepare validates the items against the format first.
import { adapterFor } from '../items/adapters.js';
import { estimateItemTokens } from '../items/tokens.js';
import type { Item } from '../items/types.js';
import type { PreparedItems, SessionRecord } from './types.js';

export function withEstimates(items: readonly Item[], session: Pick<SessionRecord, 'format'>): PreparedItems {
  const adapter = adapterFor(session.format);
  return { items, tokenEstimates: items.map((it) => estimateItemTokens(it, adapter)) };
}

/** `prepare` for callers whose items are already known good (tests, in-process callers). */
export function asIs(items: readonly Item[]): (session: SessionRecord) => PreparedItems {
  return (session) => withEstimates(items, session);
}
