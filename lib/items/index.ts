// Transcript items in both formats (SPEC A1, A2): the adapters, validation, pairing and token counts.
export * from './types.js';
export { adapterFor } from './adapters.js';
export { chatAdapter, CHAT_ROLES } from './chat.js';
export { responsesAdapter, MESSAGE_ROLES } from './responses.js';
export { pairCalls, type CallPairing } from './pairing.js';
export { describeProblem, validateItems, type ValidationResult } from './validate.js';
export * from './tokens.js';
