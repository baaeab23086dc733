// Secrets from SSM SecureStrings (REDIS_URLS_SSM_PARAM, OPENAI_API_KEY_SSM_PARAM) through
// Powertools parameters over our SSM client. AWS-only, so the SSM API is mocked
// (aws-sdk-client-mock); everything above the client is the real code.
import { GetParameterCommand, ParameterNotFound, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSsmClient, ssmSecretReader } from '../../../lib/aws-clients.js';
import { ConfigError, loadConfig, resolveEngine, resolveRedisUrls } from '../../../lib/config.js';

const ssm = mockClient(SSMClient);
let client: SSMClient;
beforeEach(() => {
  ssm.reset();
  client = createSsmClient({ region: 'us-east-1' });
});
afterEach(() => client.destroy());

function parameters(values: Record<string, string>) {
  ssm.on(GetParameterCommand).callsFake((input: { Name: string }) => {
    const value = values[input.Name];
    if (value === undefined) throw new ParameterNotFound({ message: `${input.Name} not found`, $metadata: {} });
    return { Parameter: { Name: input.Name, Type: 'SecureString', Value: value } };
  });
}

describe('SSM secrets', () => {
  it('REDIS_URLS_SSM_PARAM: the SecureString is read decrypted and parsed as the node list', async () => {
    parameters({ '/slc/dev/redis-urls': 'rediss://:pw@a:6380, rediss://:pw@b:6380,rediss://:pw@c:6380' });
    const config = loadConfig({ REDIS_URLS_SSM_PARAM: '/slc/dev/redis-urls' });
    expect(await resolveRedisUrls(config.redis, ssmSecretReader(client))).toEqual([
      'rediss://:pw@a:6380',
      'rediss://:pw@b:6380',
      'rediss://:pw@c:6380',
    ]);
    expect(ssm.commandCalls(GetParameterCommand).map((c) => c.args[0].input)).toEqual([
      { Name: '/slc/dev/redis-urls', WithDecryption: true },
    ]);
  });

  it('reads are cached: the same parameter twice costs one SSM call', async () => {
    parameters({ '/slc/openai': 'sk-1' });
    const read = ssmSecretReader(client);
    expect([await read('/slc/openai'), await read('/slc/openai')]).toEqual(['sk-1', 'sk-1']);
    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(1);
  });

  it('OPENAI_API_KEY_SSM_PARAM fills the engine key and wins over OPENAI_API_KEY', async () => {
    parameters({ '/slc/openai': 'sk-from-ssm' });
    const config = loadConfig({
      OPENAI_BASE_URL: 'http://x/v1',
      OPENAI_MODEL: 'm',
      OPENAI_API_KEY: 'sk-env',
      OPENAI_API_KEY_SSM_PARAM: '/slc/openai',
    });
    expect(await resolveEngine(config, ssmSecretReader(client))).toEqual({
      kind: 'openai',
      baseUrl: 'http://x/v1',
      model: 'm',
      apiKey: 'sk-from-ssm',
    });
  });

  it('nothing is read when no *_SSM_PARAM variable is set (local runs and tests need no AWS)', async () => {
    parameters({});
    const config = loadConfig({ OPENAI_BASE_URL: 'http://x/v1', OPENAI_MODEL: 'm', OPENAI_API_KEY: 'sk-env' });
    const read = ssmSecretReader(client);
    expect(await resolveRedisUrls(config.redis, read)).toEqual(['redis://127.0.0.1:6379']);
    expect(await resolveEngine(config, read)).toMatchObject({ apiKey: 'sk-env' });
    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(0);
  });

  it('a missing parameter is a ConfigError naming the parameter and the variable', async () => {
    parameters({});
    const config = loadConfig({ REDIS_URLS_SSM_PARAM: '/slc/dev/nope' });
    const err = await resolveRedisUrls(config.redis, ssmSecretReader(client)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/SSM parameter "\/slc\/dev\/nope" \(REDIS_URLS_SSM_PARAM\).*ParameterNotFound/);
  });

  it('a parameter that is not a Redis node list is refused without echoing it', async () => {
    parameters({ '/slc/dev/redis-urls': 'http://:secret@a:6379' });
    const config = loadConfig({ REDIS_URLS_SSM_PARAM: '/slc/dev/redis-urls' });
    const err = await resolveRedisUrls(config.redis, ssmSecretReader(client)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/SSM parameter "\/slc\/dev\/redis-urls" \(REDIS_URLS_SSM_PARAM\) must be comma-separated redis/);
    expect((err as Error).message).not.toMatch(/secret/);
  });
});
