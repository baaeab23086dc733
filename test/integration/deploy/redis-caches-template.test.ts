// infra/deploy/redis-caches.yml, the opt-in Redlock caches stack: cfn-lint-clean with
// informational checks, and every cache an independent single-node master with TLS and AUTH.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../../infra/build.js';

const run = promisify(execFile);
const file = join(projectRoot, 'infra', 'deploy', 'redis-caches.yml');
const text = readFileSync(file, 'utf8');

/** The text of one top-level resource block (from `  Name:` to the next resource). */
function block(name: string): string {
  const start = text.indexOf(`\n  ${name}:\n`);
  if (start < 0) throw new Error(`${name} not in ${file}`);
  const rest = text.slice(start + 1);
  const next = rest.slice(1).search(/\n {2}\S[^\n]*:\n/);
  return next < 0 ? rest : rest.slice(0, next + 1);
}

describe('redis-caches.yml', () => {
  it.each([1, 2, 3, 4, 5])(
    'Cache%i is an independent master: one node, no replica or failover, TLS required, AUTH token, no eviction',
    (i) => {
      const b = block(`Cache${i}`);
      expect(b).toContain('Type: AWS::ElastiCache::ReplicationGroup');
      for (const line of [
        'NumCacheClusters: 1',
        'AutomaticFailoverEnabled: false',
        'MultiAZEnabled: false',
        'TransitEncryptionEnabled: true',
        'TransitEncryptionMode: required',
        'AtRestEncryptionEnabled: true',
        "AuthToken: !Sub '{{resolve:secretsmanager:${AuthToken}:SecretString:token}}'",
        'CacheParameterGroupName: !Ref CacheParameters',
        `PreferredCacheClusterAZs: [!Select [${(i - 1) % 3}, !Ref AvailabilityZones]]`,
      ]) {
        expect(b).toContain(line);
      }
      expect(b.includes('Condition: FiveCaches')).toBe(i > 3);
    },
  );

  it("refuses eviction (a lease key must live until its TTL) and admits only the functions' security group", () => {
    expect(block('CacheParameters')).toContain('maxmemory-policy: noeviction');
    expect(block('CacheSecurityGroup')).toMatch(/FromPort: 6379\s+ToPort: 6379\s+SourceSecurityGroupId: !Ref ClientSecurityGroupId/);
  });

  it('writes every cache URL (rediss://, with the token) to the secret the functions read through SSM', () => {
    const urls = block('RedisUrls');
    const five = /- FiveCaches\n\s+- !Sub\n\s+- '([^']+)'/.exec(urls)![1]!.split(',');
    expect(five).toEqual(
      [1, 2, 3, 4, 5].map((i) => `rediss://:\${Token}@\${Cache${i}.PrimaryEndPoint.Address}:\${Cache${i}.PrimaryEndPoint.Port}`),
    );
    const three = /- FiveCaches[\s\S]*?- !Sub\n\s+- '[^']+'[\s\S]*?- !Sub\n\s+- '([^']+)'/.exec(urls)![1]!.split(',');
    expect(three).toEqual(five.slice(0, 3));
    expect(text).toContain("Value: !Sub '/aws/reference/secretsmanager/session-lineage/${Stage}/redis-urls'");
    expect(urls).toContain("Name: !Sub 'session-lineage/${Stage}/redis-urls'");
  });
});

const hasCfnLint = await run('cfn-lint', ['--version']).then(
  () => true,
  () => false,
);
if (!hasCfnLint) console.warn('cfn-lint is not on PATH: the redis-caches.yml lint test is SKIPPED (.ci/run installs cfn-lint)');

describe.skipIf(!hasCfnLint)(`cfn-lint --include-checks I${hasCfnLint ? '' : ' (SKIPPED: cfn-lint is not on PATH)'}`, () => {
  it('redis-caches.yml: no findings at all', async () => {
    const out = await run('cfn-lint', ['--include-checks', 'I', '--format', 'json', '--', file]).then(
      (r) => r.stdout,
      (e: { stdout: string }) => e.stdout,
    );
    expect(JSON.parse(out)).toEqual([]);
  });
});
