// English validation messages for every zod/mini schema of the service, passed per parse: no
// global `z.config()` at import time, which a bundler told that lib/ has no side effects may drop
// (issue 25). Schema-level `error` options still win over these.
import type * as z from 'zod/mini';
import type { util } from 'zod/v4/core';
import en from 'zod/v4/locales/en.js';

const context = { error: en().localeError };

/** `schema.safeParse(value)` with English messages. */
export function safeParse<T extends z.ZodMiniType>(schema: T, value: unknown): util.SafeParseResult<z.output<T>> {
  return schema.safeParse(value, context);
}
