// @session-lineage/client/agents: the OpenAI Agents SDK Session. A separate entry so the main
// one type-checks without @openai/agents-core (an optional peer dependency, needed only here).
export { LineageSession } from './agents-session.js';
export type { LineageSessionOptions, LineageSessionEvent, LineageCompactionPolicy, CompactOptions } from './agents-session.js';
