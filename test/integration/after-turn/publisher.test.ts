// The after-turn publisher: the transport chosen from the parsed config, and the local
// transport's request as serverless-offline's Lambda Invoke API expects it.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../lib/config.js';
import { silentLogger } from '../../../lib/logger.js';
import { afterTurnFunctionName } from '../../../lib/after-turn/local-invoke.js';
import {
  LocalLambdaAfterTurnPublisher,
  NoopAfterTurnPublisher,
  publisherFromConfig,
  SqsAfterTurnPublisher,
  type AfterTurnEvent,
} from '../../../lib/after-turn/publisher.js';

const event: AfterTurnEvent = { tenantId: 't1', sessionId: 's1', origin: 'turn' };

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server | undefined;
afterEach(async () => {
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

async function fakeInvokeApi(status: number): Promise<{ endpoint: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      res.writeHead(status).end(status === 202 ? '' : '{"Message":"nope"}');
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe('after-turn publisher (SPEC F3)', () => {
  it('F3: the local publisher invokes {service}-{stage}-afterTurn asynchronously with an SQS-shaped event', async () => {
    const { endpoint, seen } = await fakeInvokeApi(202);
    await new LocalLambdaAfterTurnPublisher(`${endpoint}/`, 'session-lineage-local-afterTurn').publish(event);
    expect(seen).toHaveLength(1);
    const req = seen[0]!;
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/2015-03-31/functions/session-lineage-local-afterTurn/invocations');
    expect(req.headers['x-amz-invocation-type']).toBe('Event');
    const records = (JSON.parse(req.body) as { Records: Record<string, unknown>[] }).Records;
    expect(records).toHaveLength(1);
    const record = records[0]!;
    expect(JSON.parse(String(record.body))).toEqual(event);
    expect(record).toMatchObject({ eventSource: 'aws:sqs', md5OfBody: createHash('md5').update(String(record.body)).digest('hex') });
    expect(record.messageId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('F3: a refused local invoke is an error, so the caller can log it', async () => {
    const { endpoint } = await fakeInvokeApi(404);
    await expect(new LocalLambdaAfterTurnPublisher(endpoint, 'nope').publish(event)).rejects.toThrow(/HTTP 404/);
  });

  it('F3: the SQS publisher sends the event as the message body to the configured queue', async () => {
    const sqs = mockClient(SQSClient);
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm1' });
    await new SqsAfterTurnPublisher('https://sqs.example/q', new SQSClient({ region: 'us-east-1' })).publish(event);
    const calls = sqs.commandCalls(SendMessageCommand);
    expect(calls.map((c) => c.args[0].input)).toEqual([{ QueueUrl: 'https://sqs.example/q', MessageBody: JSON.stringify(event) }]);
    sqs.restore();
  });

  it('F3: publisherFromConfig picks SQS, then the local endpoint, else a no-op that says so once', async () => {
    const sqs = () => new SQSClient({ region: 'us-east-1' });
    const fromEnv = (env: NodeJS.ProcessEnv, logger = silentLogger) => publisherFromConfig(loadConfig(env), logger, sqs);
    expect(fromEnv({ AFTER_TURN_QUEUE_URL: 'https://sqs.example/q', LOCAL_LAMBDA_ENDPOINT: 'http://x' })).toBeInstanceOf(
      SqsAfterTurnPublisher,
    );
    expect(fromEnv({ LOCAL_LAMBDA_ENDPOINT: 'http://x', AFTER_TURN_FUNCTION_NAME: 'f' })).toBeInstanceOf(LocalLambdaAfterTurnPublisher);
    const logged: string[] = [];
    const noop = fromEnv(
      { AFTER_TURN_QUEUE_URL: '', LOCAL_LAMBDA_ENDPOINT: '' },
      { ...silentLogger, warn: (m: string) => void logged.push(m) },
    );
    expect(noop).toBeInstanceOf(NoopAfterTurnPublisher);
    await noop.publish(event);
    await noop.publish(event);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(/AFTER_TURN_QUEUE_URL/);
  });

  it('F3: the afterTurn function name is explicit or derived from the calling function of the same service', () => {
    expect(afterTurnFunctionName(loadConfig({ AFTER_TURN_FUNCTION_NAME: 'x-afterTurn' }))).toBe('x-afterTurn');
    expect(afterTurnFunctionName(loadConfig({ AWS_LAMBDA_FUNCTION_NAME: 'session-lineage-local-http' }))).toBe(
      'session-lineage-local-afterTurn',
    );
    expect(() => afterTurnFunctionName({})).toThrow(/AFTER_TURN_FUNCTION_NAME/);
  });
});
