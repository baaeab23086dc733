export { ApiKeyStore, hashApiKey, TENANT_ID_PATTERN, type ApiKeyResolver } from './api-keys.js';
export { HttpError, fromDomainError, type ErrorCode } from './errors.js';
export { handleHttpRequest, authenticate, readJsonBody, DEFAULT_MAX_BODY_BYTES, type ApiDeps, type Invocation } from './http-app.js';
export { routes, matchRoute, type Route, type RouteDeps, type ApiLogger, type TurnEventPublisher } from './routes.js';
export { sessionView, outcomeView, type SessionView } from './views.js';
