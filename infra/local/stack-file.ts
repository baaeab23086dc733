// The file `npm start` writes so the CLI (and curl users) can find the running local stack.
import { fileURLToPath } from 'node:url';

export const LOCAL_STACK_FILE = fileURLToPath(new URL('./.local-stack.json', import.meta.url));

export interface LocalStackFile {
  redisUrls: string[];
  dynamodbEndpoint: string;
  tableName: string;
  baseUrl: string;
  lambdaEndpoint: string;
  /** PID of the `npm start` process that owns everything listed here. */
  pid: number;
  /** npm start's control endpoint on loopback (`npm run stack -- restart <node>` posts to it). */
  controlUrl?: string;
  /** The Redis nodes npm start started, by name (e.g. redis:41234), with their current pid. */
  redisNodes?: { name: string; url: string; pid: number }[];
  /** Where DynamoDB Local keeps the data (absent: user-provided DYNAMODB_ENDPOINT). */
  dataDir?: string;
}

/** True unless `pid` is certainly gone (EPERM: alive, another user's). */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
