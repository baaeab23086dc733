// `keys create | list | revoke` as child processes against the test stack; the prompt's answers
// (which need a terminal) in-process.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { ApiKeyStore, hashApiKey, keyIdOf } from '../../../lib/api/api-keys.js';
import { createDynamoClient } from '../../../lib/aws-clients.js';
import { cli, cliInProcess } from '../../support/cli.js';

const client = createDynamoClient({ endpoint: process.env.DYNAMODB_ENDPOINT });
const keys = new ApiKeyStore({ client, tableName: process.env.TABLE_NAME! });
afterAll(() => client.destroy());

const tenant = () => `t-${randomUUID().slice(0, 8)}`;

describe('keys', () => {
  it('create prints the key alone on stdout; list shows its id, tenant and time, never the key', async () => {
    const t = tenant();
    const created = await cli(['keys', 'create', '--tenant', t]);
    expect(created.code, created.stderr).toBe(0);
    // The key alone on stdout (the README's KEY=$(npm run -s cli -- keys create ...)); what it is, on stderr.
    expect(created.stdout).toMatch(/^\S+\n$/);
    expect(created.stderr).toContain(`# API key for tenant ${t}`);
    const key = created.stdout.trimEnd();
    expect(await keys.resolve(key)).toBe(t);
    const other = await keys.create(tenant());

    const listed = await cli(['keys', 'list', '--tenant', t, '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      { keyId: keyIdOf(hashApiKey(key)), tenantId: t, createdAt: expect.stringMatching(/^\d{4}-/) },
    ]);
    expect(listed.stdout).not.toContain(key);
    expect(listed.stdout).not.toContain(hashApiKey(key));

    const all = await cliInProcess(['keys', 'list']);
    expect(all.stdout).toMatch(/^KEY ID\s+TENANT\s+CREATED\n/);
    expect(all.stdout).toMatch(new RegExp(`\\n${keyIdOf(hashApiKey(key))}\\s+${t}\\s+\\d{4}-`));
    expect(all.stdout).toContain(other.keyId);
    expect((await cliInProcess(['keys', 'create'])).code).toBe(2);
    expect((await cliInProcess(['keys', 'list', '--tenant', 'bad/tenant'])).code).toBe(2);
  });

  it('revoke without a terminal and without --yes refuses (exit 2) and the key keeps working; with --yes it stops resolving', async () => {
    const { key, keyId } = await keys.create(tenant());
    const refused = await cli(['keys', 'revoke', keyId]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`refusing to revoke API key ${keyId}`);
    expect(refused.stderr).toContain('pass --yes');
    expect(await keys.resolve(key)).not.toBeNull();

    const revoked = await cli(['keys', 'revoke', keyId, '--yes']);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain(`revoked API key ${keyId}`);
    expect(revoked.stdout).toContain('up to API_KEY_CACHE_TTL_SECONDS more (default 60 s)');
    expect(await keys.resolve(key)).toBeNull();
    expect(await keys.findById(keyId)).toEqual([]);

    const again = await cliInProcess(['keys', 'revoke', keyId, '--yes']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`no API key with id ${keyId}`);
    expect((await cliInProcess(['keys', 'revoke', 'not-hex!'])).code).toBe(2);
  });

  it('on a terminal revoke asks: "n" (or no answer) changes nothing, "y" revokes', async () => {
    const { key, keyId } = await keys.create(tenant());
    for (const answer of ['n\n', '', 'yes please\n']) {
      const run = await cliInProcess(['keys', 'revoke', keyId], { interactive: true, answer });
      expect(run.code, JSON.stringify(answer)).toBe(1);
      expect(run.stderr).toContain(`Revoke API key ${keyId} of tenant`);
      expect(run.stderr).toContain('aborted: nothing was changed');
      expect(await keys.resolve(key)).not.toBeNull();
    }
    const yes = await cliInProcess(['keys', 'revoke', keyId.slice(0, 8)], { interactive: true, answer: 'y\n' });
    expect(yes.code, yes.stderr).toBe(0);
    expect(await keys.resolve(key)).toBeNull();
  });
});
