// A whole stack a chaos test owns and breaks: three Redis nodes, a DynamoDB Local process with
// the table, and the service under serverless-offline pointed at them. Faults are by PID:
// SIGKILL/restart a Redis node, SIGSTOP/SIGCONT DynamoDB Local.
import { readFileSync } from 'node:fs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startDynamoDbLocal, type LocalProcess } from '../../../infra/local/processes.js';
import { ensureTable } from '../../../infra/table.js';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { createDynamoClient } from '../../../lib/aws-clients.js';
import { SessionLease } from '../../../lib/lease/index.js';
import { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import { startLocalService, type LocalService } from '../local-service.js';
import { startOwnRedisNodes, type OwnRedisNodes } from './redis-nodes.js';

export interface OwnStack {
  nodes: OwnRedisNodes;
  dynamo: LocalProcess;
  /** A client of the stack's DynamoDB Local for the test's own reads (not the service's). */
  ddb: DynamoDBClient;
  tableName: string;
  store: DynamoLineageStore;
  lease: SessionLease;
  service: LocalService;
  createApiKey(tenant: string): Promise<string>;
  /** SIGSTOP DynamoDB Local and wait until it is stopped (requests hang; the data survives); resumeDynamo() sends SIGCONT. */
  pauseDynamo(): Promise<void>;
  resumeDynamo(): void;
  stop(): Promise<void>;
}

export async function startOwnStack(opts: { tableName: string; env?: Record<string, string> }): Promise<OwnStack> {
  const [nodes, dynamo] = await Promise.all([startOwnRedisNodes(3), startDynamoDbLocal()]);
  const ddb = createDynamoClient({ endpoint: dynamo.url, maxAttempts: 3 });
  await ensureTable(ddb, opts.tableName);
  const service = await startLocalService({
    afterTurn: false,
    env: { REDIS_URLS: nodes.urls.join(','), DYNAMODB_ENDPOINT: dynamo.url, TABLE_NAME: opts.tableName, ...opts.env },
  });
  let paused = false;
  const resumeDynamo = () => {
    if (!paused) return;
    process.kill(dynamo.pid, 'SIGCONT');
    paused = false;
  };
  return {
    nodes,
    dynamo,
    ddb,
    tableName: opts.tableName,
    store: new DynamoLineageStore({ client: ddb, tableName: opts.tableName }),
    lease: new SessionLease({ clients: nodes.clients }),
    service,
    createApiKey: async (tenant) => (await new ApiKeyStore({ client: ddb, tableName: opts.tableName }).create(tenant)).key,
    async pauseDynamo() {
      process.kill(dynamo.pid, 'SIGSTOP');
      paused = true;
      // The fault is real: the process is stopped (state T), not merely signalled.
      const state = () => readFileSync(`/proc/${dynamo.pid}/stat`, 'utf8').split(') ')[1]?.[0];
      for (let i = 0; state() !== 'T'; i++) {
        if (i >= 100) throw new Error(`DynamoDB Local (pid ${dynamo.pid}) is in state ${state()} 1 s after SIGSTOP`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    resumeDynamo,
    async stop() {
      resumeDynamo();
      await service.stop().catch(() => undefined);
      ddb.destroy();
      await Promise.all([nodes.stop(), dynamo.stop('SIGKILL')]);
    },
  };
}
