// `keys create | list | revoke`: API keys (SPEC F2). Keys are stored only as hashes, so an
// operator names a key by its id (the first 12 hex chars of the hash) as `keys list` shows it.
import { ApiKeyStore, KEY_ID_LENGTH, type ApiKeyInfo } from '../../../lib/api/api-keys.js';
import { DEFAULT_API_KEY_CACHE_TTL_MS } from '../../../lib/api/api-key-cache.js';
import { parseCommand, tenantOf } from '../args.js';
import type { Command } from '../command.js';
import { CliError, EXIT_OK, UsageError } from '../errors.js';
import { confirm } from '../io.js';
import { columns, emit } from '../output.js';
import { withTarget } from '../target.js';

const TARGET = '[--stage <s> [--region <r>] [--table <name>]]';
const CREATE_USAGE = `keys create --tenant <t> [--json] ${TARGET}`;
const LIST_USAGE = `keys list [--tenant <t>] [--json] ${TARGET}`;
const REVOKE_USAGE = `keys revoke <keyId> [--yes] [--json] ${TARGET}`;

// The API's per-container cache of key lookups (API_KEY_CACHE_TTL_SECONDS) delays a revocation.
const cacheSeconds = DEFAULT_API_KEY_CACHE_TTL_MS / 1000;

export const keysCreate: Command = {
  name: 'keys create',
  usage: CREATE_USAGE,
  summary: 'create an API key for a tenant (printed alone on stdout, shown only once)',
  async run(args, io) {
    const { values } = parseCommand(args, { usage: CREATE_USAGE, options: { tenant: { type: 'string' } }, required: ['tenant'] });
    const tenant = tenantOf(values.tenant, CREATE_USAGE);
    return withTarget(values, io, async (target) => {
      const { client, tableName, endpoint } = await target.table();
      const { key, keyId } = await new ApiKeyStore({ client, tableName }).create(tenant);
      // The key alone on stdout, so `KEY=$(npm run -s cli -- keys create --tenant t)` (the README's quick start) keeps
      // just the key; what it is goes to stderr with the other notes.
      if (!values.json)
        io.stderr.write(
          `# API key for tenant ${tenant} (table ${tableName}${endpoint ? ` at ${endpoint}` : ''}); it is shown only once:\n`,
        );
      emit(io, values.json, { tenantId: tenant, keyId, key }, () => [key]);
      return EXIT_OK;
    });
  },
};

const view = ({ keyId, tenantId, createdAt }: ApiKeyInfo) => ({ keyId, tenantId, createdAt });

export const keysList: Command = {
  name: 'keys list',
  usage: LIST_USAGE,
  summary: 'key ids, tenants and creation times (a Query of the key index, no table Scan)',
  async run(args, io) {
    const { values } = parseCommand(args, { usage: LIST_USAGE, options: { tenant: { type: 'string' } } });
    const tenant = values.tenant === undefined ? undefined : tenantOf(values.tenant, LIST_USAGE);
    return withTarget(values, io, async (target) => {
      const { client, tableName } = await target.table();
      const keys = await new ApiKeyStore({ client, tableName }).list(tenant);
      emit(io, values.json, keys.map(view), () =>
        keys.length === 0
          ? [`no API keys${tenant ? ` for tenant ${tenant}` : ''} in ${tableName}`]
          : columns([['KEY ID', 'TENANT', 'CREATED'], ...keys.map((k) => [k.keyId, k.tenantId, k.createdAt])]),
      );
      return EXIT_OK;
    });
  },
};

export const keysRevoke: Command = {
  name: 'keys revoke',
  usage: REVOKE_USAGE,
  summary: `delete an API key by id (asks first; warm API containers may accept it for up to ${cacheSeconds} s more)`,
  async run(args, io) {
    const { values, positionals } = parseCommand(args, {
      usage: REVOKE_USAGE,
      positionals: ['keyId'],
      options: { yes: { type: 'boolean' } },
    });
    const keyId = positionals[0]!.toLowerCase();
    if (!/^[0-9a-f]{8,64}$/.test(keyId))
      throw new UsageError(
        `invalid key id "${positionals[0]}": ${KEY_ID_LENGTH} hex chars as \`keys list\` shows (at least 8)`,
        REVOKE_USAGE,
      );
    return withTarget(values, io, async (target) => {
      const { client, tableName } = await target.table();
      const store = new ApiKeyStore({ client, tableName });
      const matches = await store.findById(keyId);
      if (matches.length === 0) throw new CliError(`no API key with id ${keyId} in ${tableName}`);
      if (matches.length > 1)
        throw new CliError(`key id ${keyId} is ambiguous (${matches.map((k) => k.keyId).join(', ')}): give more of the hash`);
      const key = matches[0]!;
      await confirm(
        io,
        `revoke API key ${key.keyId} of tenant ${key.tenantId} (created ${key.createdAt}) in ${tableName}`,
        Boolean(values.yes),
      );
      if (!(await store.revoke(key.hash))) throw new CliError(`API key ${key.keyId} was already revoked`);
      emit(io, values.json, { revoked: view(key) }, () => [
        `revoked API key ${key.keyId} of tenant ${key.tenantId}.`,
        `Warm API containers cache key lookups: they may accept it for up to API_KEY_CACHE_TTL_SECONDS more (default ${cacheSeconds} s).`,
      ]);
      return EXIT_OK;
    });
  },
};
