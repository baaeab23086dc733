// Ported from openai/openai-agents-js packages/agents-core/test/session.test.ts at commit
// 6d0c61a5f62a5ed8142996a25b33446c810f84b3: the SDK's type guards decide which optional session
// capabilities the runner uses. Rewritten by us to ask them about LineageSession itself (no
// service needed: the guards look at the object, and constructing one sends nothing).
//
// LineageSession is compaction-aware (the runner calls runCompaction after each turn it saves),
// history transaction-aware and history rewrite-aware (SPEC X1: POST .../transactions).
import {
  isOpenAIResponsesCompactionAwareSession,
  isOpenAIResponsesCompactionOwnershipAwareSession,
  isRunContextAwareSession,
  isSessionHistoryRewriteAwareSession,
  isSessionHistoryTransactionAwareSession,
  type OpenAIResponsesCompactionAwareSession,
  type OpenAIResponsesCompactionOwnershipAwareSession,
  type Session,
  type SessionHistoryRewriteAwareSession,
  type SessionHistoryTransactionAwareSession,
} from '@openai/agents-core';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { LineageClient } from '../../../../lib/client/index.js';
import { LineageSession } from '../../../../lib/client/agents.js';

const requests: string[] = [];
const client = new LineageClient({
  baseUrl: 'http://127.0.0.1:9',
  apiKey: 'slk_unused',
  fetch: (req) => {
    requests.push(req.url);
    return Promise.reject(new TypeError('no request is expected here'));
  },
});

describe('session type guards, asked about LineageSession', () => {
  const session = new LineageSession({ client });

  it('is a Session and an OpenAI Responses compaction-aware session', () => {
    expectTypeOf(session).toMatchTypeOf<Session>();
    expectTypeOf(session).toMatchTypeOf<OpenAIResponsesCompactionAwareSession>();
    expect(isOpenAIResponsesCompactionAwareSession(undefined)).toBe(false);
    expect(isOpenAIResponsesCompactionAwareSession(session)).toBe(true);
  });

  it('X1: is history transaction-aware and rewrite-aware', () => {
    expectTypeOf(session).toMatchTypeOf<SessionHistoryTransactionAwareSession>();
    expectTypeOf(session).toMatchTypeOf<SessionHistoryRewriteAwareSession>();
    expect(isSessionHistoryTransactionAwareSession(session)).toBe(true);
    expect(isSessionHistoryRewriteAwareSession(session)).toBe(true);
  });

  it('X2: is ownership-aware (receipts checked by the held begin), not run-context-aware', () => {
    expectTypeOf(session).toMatchTypeOf<OpenAIResponsesCompactionOwnershipAwareSession>();
    expect(isOpenAIResponsesCompactionOwnershipAwareSession(session)).toBe(true);
    expect(isRunContextAwareSession(session)).toBe(false);
    expect(requests).toEqual([]);
  });
});
