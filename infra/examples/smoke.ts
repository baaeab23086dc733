// `npm run example:smoke` (CI): the example agent, then the own-compactor example (own-compactor.ts),
// against a service of its own. Starts a
// local stack (3 Redis nodes, DynamoDB Local) and the built functions under serverless-offline
// on free ports, as test/support/local-service.ts does, runs the example conversation, checks
// what it left behind, and stops everything it started, whatever happened.
import { buildFunctions } from '../build.js';
import { ApiKeyStore } from '../../lib/api/api-keys.js';
import { createDynamoClient } from '../../lib/aws-clients.js';
import { LineageClient } from '@session-lineage/client';
import { startOffline, type OfflineProcess } from '../local/offline.js';
import { freePort } from '../local/processes.js';
import { startLocalStack, stackEnv, type LocalStack } from '../local/stack.js';
import { runExampleConversation, TURNS, type ExampleResult } from './conversation.js';
import { checkOwnCompactor, runOwnCompactor } from './own-compactor.js';

function check(result: ExampleResult): string[] {
  const problems: string[] = [];
  const [root, ...rest] = result.chain;
  if (!root || rest.length === 0) problems.push(`expected a rotated chain, got ${result.chain.length} session(s)`);
  if (root && root.endReason !== 'compression') problems.push(`the root ended with ${root.endReason}, not compression`);
  if (result.chain.at(-1)?.sessionId !== result.liveSessionId)
    problems.push('the live session the last read named is not the tip of the chain');
  if (result.idsSeen.length !== TURNS || result.idsSeen.some((id) => id !== result.conversationId))
    problems.push(`getSessionId() changed during the conversation: ${JSON.stringify(result.idsSeen)} (expected ${result.conversationId})`);
  result.chain.forEach((s, i) => {
    const next = result.chain[i + 1];
    if (next && (s.childSessionId !== next.sessionId || next.parentSessionId !== s.sessionId))
      problems.push(`broken link ${s.sessionId} → ${next.sessionId}`);
  });
  if (result.answers.length !== TURNS || result.answers.some((a) => !a.includes(' is ')))
    problems.push(`answers: ${JSON.stringify(result.answers)}`);
  const last = JSON.stringify(result.transcript.at(-1) ?? null);
  if (!last.includes(`[turn ${TURNS}]`)) problems.push(`the live transcript does not end with turn ${TURNS}: ${last}`);
  if (!JSON.stringify(result.transcript).includes('Summary of')) problems.push('the live transcript has no summary');
  return problems;
}

let stack: LocalStack | undefined;
let offline: OfflineProcess | undefined;
let code = 0;
try {
  // Own servers, never whatever REDIS_URLS / DYNAMODB_ENDPOINT the shell points at.
  stack = await startLocalStack({ redisNodes: 3, tableName: 'session-lineage-smoke', env: {} });
  await buildFunctions();
  const [httpPort, lambdaPort] = await Promise.all([freePort(), freePort()]);
  offline = await startOffline({
    httpPort,
    lambdaPort,
    env: { ...stackEnv(stack), LOCAL_LAMBDA_ENDPOINT: `http://127.0.0.1:${lambdaPort}` },
    output: 'pipe',
  });
  const ddb = createDynamoClient({ endpoint: stack.dynamodbEndpoint, maxAttempts: 3 });
  const { key } = await new ApiKeyStore({ client: ddb, tableName: stack.tableName }).create('example-smoke');
  ddb.destroy();

  const client = new LineageClient({ baseUrl: offline.baseUrl, apiKey: key });
  const result = await runExampleConversation(client);
  console.log('\nown compactor (held compaction attempts):');
  const own = await runOwnCompactor(client);
  const problems = [...check(result), ...checkOwnCompactor(own).map((p) => `own compactor: ${p}`)];
  if (problems.length > 0) {
    console.error(`\nexample smoke test FAILED:\n  ${problems.join('\n  ')}`);
    code = 1;
  } else {
    console.log(
      `\nexample smoke test passed: ${TURNS} turns, ${result.chain.length} sessions in the chain, ${result.transcript.length} live items; own compactor: one engine call, one child`,
    );
  }
} catch (err) {
  console.error(`example smoke test FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  if (offline) console.error(offline.log().slice(-3000));
  code = 1;
} finally {
  await offline?.stop().catch((err: unknown) => console.error('serverless offline:', err));
  await stack?.stop().catch((err: unknown) => console.error('local stack:', err));
}
process.exit(code);
