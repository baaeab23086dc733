// Operator CLI entry point (`npm run cli -- <command>`); the commands live in infra/cli/
// (README.md "Operator CLI"). `keys create --tenant <name>` prints the new key
// alone on the last line.
import { run } from './cli/main.js';

process.exit(await run(process.argv.slice(2)));
