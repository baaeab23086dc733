// `npm run stack`: start the local stack (N Redis nodes + DynamoDB Local, in memory), print its
// endpoints, stop it on Ctrl-C. `npm run stack -- restart <node>`: ask the running `npm start`
// (found through its stack file) to start a Redis node that died again, on the same port.
import { readFileSync } from 'node:fs';
import { requestRedisRestart } from './control.js';
import { isPidAlive, LOCAL_STACK_FILE, type LocalStackFile } from './stack-file.js';
import { startLocalStack, stackEnv } from './stack.js';

async function restart(name: string | undefined): Promise<number> {
  const file = process.env.LOCAL_STACK_FILE || LOCAL_STACK_FILE;
  let stack: Partial<LocalStackFile>;
  try {
    stack = JSON.parse(readFileSync(file, 'utf8')) as Partial<LocalStackFile>;
  } catch {
    console.error(`error: no local stack: ${file} is missing or unreadable; run \`npm start\` first`);
    return 1;
  }
  if (typeof stack.pid === 'number' && !isPidAlive(stack.pid)) {
    console.error(`error: no local stack is running: ${file} is stale (its npm start, pid ${stack.pid}, is not running)`);
    return 1;
  }
  const nodes = (stack.redisNodes ?? []).map((n) => n.name);
  if (!name) {
    console.error(`usage: npm run stack -- restart <node>   (this stack's nodes: ${nodes.join(', ') || 'none'})`);
    return 2;
  }
  if (!stack.controlUrl) {
    console.error(`error: ${file} has no control endpoint (written by an older npm start); restart npm start`);
    return 1;
  }
  try {
    const node = await requestRedisRestart(stack.controlUrl, name);
    console.log(`restarted ${node.name} (pid ${node.pid}) at ${node.url}`);
    return 0;
  } catch (err) {
    console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

async function standalone(nodes: number): Promise<void> {
  const stack = await startLocalStack({ redisNodes: nodes });
  for (const [k, v] of Object.entries(stackEnv(stack))) console.log(`${k}=${v}`);
  for (const p of stack.processes) console.log(`# started ${p.name} pid ${p.pid}`);
  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    await stack.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown());
  process.on('SIGTERM', () => void shutdown());
  setInterval(() => undefined, 1 << 30);
}

const [first, second] = process.argv.slice(2);
if (first === 'restart') process.exit(await restart(second));
else if (first === undefined || /^\d+$/.test(first)) await standalone(Number(first ?? 3));
else {
  console.error('usage: npm run stack [-- <redis nodes, default 3>]  |  npm run stack -- restart <node>');
  process.exit(2);
}
