// `npm run package` with no AWS credentials: one bundle per function, and a CloudFormation
// template whose table is the shared JSON, with one least-privilege role per function and the
// HTTP routes documented in functions/openapi.json.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../infra/build.js';
import { routes } from '../../lib/api/routes.js';

const run = promisify(execFile);

interface Resource {
  Type: string;
  Properties: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- CloudFormation JSON
}

let resources: Record<string, Resource>;
let zips: Record<string, string[]>;

beforeAll(async () => {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    // No credentials at all, and none of the local-stack variables that would be baked in.
    if (v === undefined || /^AWS_/.test(k) || ['REDIS_URLS', 'TABLE_NAME', 'DYNAMODB_ENDPOINT'].includes(k)) continue;
    env[k] = v;
  }
  env.AWS_SHARED_CREDENTIALS_FILE = '/nonexistent';
  env.AWS_CONFIG_FILE = '/nonexistent';
  env.SLS_TELEMETRY_DISABLED = '1';
  await run('npm', ['run', 'package'], { cwd: projectRoot, env, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 });
  const template = JSON.parse(readFileSync(`${projectRoot}/.serverless/cloudformation-template-update-stack.json`, 'utf8')) as { Resources: Record<string, Resource> };
  resources = template.Resources;
  zips = {};
  for (const fn of ['http', 'afterTurn', 'sweep']) {
    const { stdout } = await run('unzip', ['-Z1', `${projectRoot}/.serverless/${fn}.zip`]);
    zips[fn] = stdout.trim().split('\n');
  }
}, 300_000);

const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);

describe('serverless package', () => {
  it('packages each function individually with only its own bundle: index.mjs and its chunks, no metafile', () => {
    const dirs = { http: 'http', afterTurn: 'after-turn', sweep: 'sweep' } as const;
    for (const [fn, dir] of Object.entries(dirs)) {
      const files = zips[fn]!;
      expect(files).toContain(`.esbuild/${dir}/index.mjs`);
      for (const f of files) expect(f).toMatch(new RegExp(`^\\.esbuild/${dir}/[\\w-]+\\.mjs$`));
      expect([...files].sort()).toEqual([...readdirSync(`${projectRoot}/.esbuild/${dir}`)].filter((f) => f.endsWith('.mjs')).map((f) => `.esbuild/${dir}/${f}`).sort());
    }
  });

  it('declares the table with exactly the properties of infra/table-definition.json', () => {
    const definition = JSON.parse(readFileSync(`${projectRoot}/infra/table-definition.json`, 'utf8')) as unknown;
    const tables = ofType('AWS::DynamoDB::Table');
    expect(tables).toHaveLength(1);
    expect(tables[0]![1].Properties).toEqual(definition);
  });

  it('gives each function its own role, with no SQS send outside http and no Scan outside sweep', () => {
    const fns = Object.fromEntries(ofType('AWS::Lambda::Function').map(([, r]) => [r.Properties.Handler as string, r.Properties]));
    const roleOf = (handler: string) => fns[handler]!.Role['Fn::GetAtt'][0] as string;
    const roles = ['.esbuild/http/index.handler', '.esbuild/after-turn/index.handler', '.esbuild/sweep/index.handler'].map(roleOf);
    expect(new Set(roles).size).toBe(3);
    expect(ofType('AWS::IAM::Role').map(([name]) => name).sort()).toEqual([...roles].sort());
    const actions = (role: string) =>
      (resources[role]!.Properties.Policies as { PolicyDocument: { Statement: { Action: string | string[] }[] } }[])
        .flatMap((p) => p.PolicyDocument.Statement)
        .flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
    const [http, afterTurn, sweep] = roles.map(actions) as [string[], string[], string[]];
    for (const a of [...http, ...afterTurn, ...sweep]) expect(a).not.toMatch(/\*/);
    expect(http).toContain('sqs:SendMessage');
    expect(afterTurn).not.toContain('sqs:SendMessage');
    expect(afterTurn).toContain('sqs:DeleteMessage');
    expect(sweep.filter((a) => a.startsWith('sqs:'))).toEqual([]);
    expect(sweep).toContain('dynamodb:Scan');
    expect([...http, ...afterTurn]).not.toContain('dynamodb:Scan');
  });

  it('wires the after-turn queue (with DLQ redrive, partial batch failures) and the 5-minute schedule', () => {
    const mapping = ofType('AWS::Lambda::EventSourceMapping')[0]![1].Properties;
    expect(mapping.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
    expect(resources.AfterTurnQueue!.Properties.RedrivePolicy.deadLetterTargetArn).toEqual({ 'Fn::GetAtt': ['AfterTurnDeadLetterQueue', 'Arn'] });
    expect(ofType('AWS::Events::Rule')[0]![1].Properties.ScheduleExpression).toBe('rate(5 minutes)');
  });

  it('F1: the HTTP API routes are exactly the documented and routed ones (plus the $default catch-all)', () => {
    const doc = JSON.parse(readFileSync(`${projectRoot}/functions/openapi.json`, 'utf8')) as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item).filter((m) => m !== 'parameters').map((m) => `${m.toUpperCase()} ${p}`));
    const declared = ofType('AWS::ApiGatewayV2::Route').map(([, r]) => r.Properties.RouteKey as string).filter((k) => k !== '$default');
    expect(declared.sort()).toEqual(documented.sort());
    expect(declared.sort()).toEqual(routes.map((r) => `${r.method} ${r.path}`).sort());
  });

  it('reads Redis endpoints from SSM at deploy time and the table name from the stack, never from the packaging machine', () => {
    const env = ofType('AWS::Lambda::Function')[0]![1].Properties.Environment.Variables;
    expect(env.REDIS_URLS).toMatch(/^\{\{resolve:ssm:\/session-lineage\/dev\/redis-urls\}\}$/);
    expect(env.TABLE_NAME).toEqual({ Ref: 'LineageTable' });
    expect(env.AFTER_TURN_QUEUE_URL).toEqual({ Ref: 'AfterTurnQueue' });
    expect(env.DYNAMODB_ENDPOINT).toBe('');
  });
});
