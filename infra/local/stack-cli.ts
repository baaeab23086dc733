// `npm run stack`: start the local stack, print its endpoints, stop it on Ctrl-C.
import { startLocalStack, stackEnv } from './stack.js';

const nodes = Number(process.argv[2] ?? 3);
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
