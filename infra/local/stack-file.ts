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
}
