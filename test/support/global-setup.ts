// Vitest global setup: one local stack (3 Redis nodes + DynamoDB Local) for the run.
// Its endpoints reach test files through process.env, which forked workers inherit.
import { startLocalStack, stackEnv, type LocalStack } from '../../infra/local/stack.js';

let stack: LocalStack | undefined;

export async function setup(): Promise<void> {
  stack = await startLocalStack({ redisNodes: 3, tableName: 'session-lineage-test' });
  Object.assign(process.env, stackEnv(stack));
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
