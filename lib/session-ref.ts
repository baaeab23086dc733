// A session is always addressed within its tenant; no key can be built without one.
export interface SessionRef {
  readonly tenantId: string;
  readonly sessionId: string;
}

/** Opaque per-session key used for the Redis lease and the fence counter. */
export function sessionKey(ref: SessionRef): string {
  return `${ref.tenantId}/${ref.sessionId}`;
}

export function parseSessionKey(key: string): SessionRef {
  const i = key.indexOf('/');
  if (i <= 0 || i === key.length - 1) throw new Error(`not a session key: ${key}`);
  return { tenantId: key.slice(0, i), sessionId: key.slice(i + 1) };
}
