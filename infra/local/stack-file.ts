// The file `npm start` writes so the CLI (and curl users) can find the running local stack.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = 'session-lineage-coordinator';

/**
 * The project root: the nearest folder above this module whose package.json is this project's.
 * This module runs from infra/local/ under tsx and from the CLI's bundle under
 * node_modules/.cache/session-lineage-cli/ (issue 34): a path relative to the module itself would
 * name a file under node_modules that npm start never writes.
 */
export function findProjectRoot(from: string = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown }).name === PACKAGE_NAME) return dir;
      } catch {
        // not a readable package.json: keep looking up
      }
    }
    if (dirname(dir) === dir) throw new Error(`cannot find the ${PACKAGE_NAME} project above ${from}`);
  }
}

export const LOCAL_STACK_FILE = join(findProjectRoot(), 'infra', 'local', '.local-stack.json');

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

/**
 * What npm start writes first, before it starts anything: the CLI, finding it with a live pid,
 * waits for the full file instead of answering "run npm start first" (issue 34).
 */
export interface StartingStackFile {
  starting: true;
  pid: number;
}

export const isStarting = (file: object): file is StartingStackFile => 'starting' in file && file.starting === true;

/** True unless `pid` is certainly gone (EPERM: alive, another user's). */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
