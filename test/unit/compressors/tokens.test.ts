import { encode, encodeChat } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import type { Message } from '../../../lib/messages.js';
import { countMessageTokens, countTextTokens, countTokens, isWithinTokenLimit } from '../../../lib/compressors/tokens.js';
import { agentSession, toolCall } from './transcripts.js';

describe('C7 support: countTokens (o200k_base) measures whether a result is smaller', () => {
  it('agrees with gpt-tokenizer encodeChat for a plain chat (per-message framing included)', () => {
    const chat = agentSession().filter((m) => m.tool_calls === undefined && m.tool_call_id === undefined);
    const direct = encodeChat(
      chat.map((m) => ({ role: m.role, content: m.content })),
      'gpt-4o',
    ).length;
    expect(countTokens(chat)).toBe(direct);
  });

  it('countTextTokens equals the encoded length', () => {
    const text = 'Found it: the export fails because the S3 bucket policy changed. ünïcødé 🚀 const x = 1;';
    expect(countTextTokens(text)).toBe(encode(text).length);
    expect(countTextTokens('')).toBe(0);
    expect(countTokens([])).toBe(0);
  });

  it('counts special-token text in client content as plain text instead of throwing', () => {
    const text = 'a literal <|endoftext|> and <|im_start|> in a transcript';
    expect(countTextTokens(text)).toBeGreaterThan(encode('a literal  and  in a transcript').length);
  });

  it('counts tool calls, tool_call_id and names on top of the content', () => {
    const plain: Message = { role: 'assistant', content: 'Running.' };
    const withCall: Message = { ...plain, tool_calls: [toolCall('c1', 'run_job', { job: 'export' })] };
    expect(countMessageTokens(withCall)).toBe(
      countMessageTokens(plain) + countTextTokens('run_job') + countTextTokens(JSON.stringify({ job: 'export' })),
    );
    const named: Message = { role: 'user', content: 'hi', name: 'alice' };
    expect(countMessageTokens(named)).toBe(countMessageTokens({ role: 'user', content: 'hi' }) + countTextTokens('alice') + 1);
  });

  it('handles a 1 MB transcript and isWithinTokenLimit agrees with the full count', () => {
    const line = 'The quick brown fox jumps over the lazy dog; const total = items.reduce((a, b) => a + b, 0);\n';
    const messages: Message[] = Array.from({ length: 100 }, (_, i) => ({
      role: i % 2 === 0 ? 'user' : 'assistant',
      content: line.repeat(Math.ceil(10_000 / line.length)),
    }));
    expect(messages.reduce((n, m) => n + m.content.length, 0)).toBeGreaterThan(1_000_000);
    const total = countTokens(messages);
    expect(total).toBe(3 + messages.reduce((n, m) => n + 3 + encode(m.role).length + encode(m.content).length, 0));
    expect(isWithinTokenLimit(messages, total)).toBe(true);
    expect(isWithinTokenLimit(messages, total - 1)).toBe(false);
  });
});
