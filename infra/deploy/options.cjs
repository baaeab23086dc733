// Packaging-time deploy options (issue 14), computed from `--param` values whose defaults live in
// serverless.yml `params.default`; serverless.yml reads the result as ${self:custom.deploy.*}.
//
// Plain YAML cannot split a list, leave a key out when a param is empty, or add resources only
// when asked. This file does exactly that, and validates every param so a typo fails
// `npm run package` instead of a deploy. Only names and ids pass through here, never a secret:
// everything it returns is written to .serverless/serverless-state.json.
/* global module -- CommonJS: serverless loads this file with require() */
'use strict';

/** Interface endpoints we know how to create (param `interfaceEndpoints`), by AWS service short name. */
const INTERFACE_ENDPOINTS = {
  sqs: 'Sqs',
  ssm: 'Ssm',
  events: 'Events',
  xray: 'Xray',
  secretsmanager: 'SecretsManager',
  kms: 'Kms',
  logs: 'Logs',
  monitoring: 'Monitoring',
};
/** SSM's pass-through to Secrets Manager: GetParameter on this path returns the secret. */
const SECRETS_MANAGER_REFERENCE = '/aws/reference/secretsmanager/';

function fail(message) {
  throw new Error(`serverless.yml param ${message} (see README.md)`);
}

function list(value) {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function ids(name, value, prefix) {
  const out = list(value);
  for (const id of out) if (!new RegExp(`^${prefix}-[0-9a-f]{8,17}$`).test(id)) fail(`${name}: "${id}" is not a ${prefix}-... id`);
  return out;
}

function int(name, value, { min, max, optional = false }) {
  if (value === '' && optional) return null;
  const n = Number(value);
  if (value === '' || !Number.isInteger(n) || n < min || n > max)
    fail(`${name}: "${value}" must be an integer from ${min} to ${max}${optional ? ', or empty' : ''}`);
  return n;
}

function num(name, value, { min, max }) {
  const n = Number(value);
  if (value === '' || !Number.isFinite(n) || n < min || n > max) fail(`${name}: "${value}" must be a number from ${min} to ${max}`);
  return n;
}

function ssmName(name, value) {
  // Parameter Store's own character set; it also keeps `${` out of the Fn::Sub strings below.
  if (!/^\/[A-Za-z0-9_.\-/]+$/.test(value))
    fail(`${name}: "${value}" must be a full SSM parameter name such as /session-lineage/prod/redis-urls`);
  return value;
}

/** An ARN in this stack's partition, region and account. */
function arn(service, resource) {
  return { 'Fn::Sub': `arn:\${AWS::Partition}:${service}:\${AWS::Region}:\${AWS::AccountId}:${resource}` };
}

/** ssm:GetParameter on exactly these names, the Secrets Manager secret behind a reference name, and kms:Decrypt only via those services. */
function secretsPolicy(names, kmsKeyArn) {
  const referenced = names.filter((n) => n.startsWith(SECRETS_MANAGER_REFERENCE)).map((n) => n.slice(SECRETS_MANAGER_REFERENCE.length));
  const statements = [
    {
      Sid: 'ReadOwnSecretParameters',
      Effect: 'Allow',
      Action: 'ssm:GetParameter',
      Resource: names.map((n) => arn('ssm', `parameter${n}`)),
    },
  ];
  if (referenced.length > 0) {
    // Secrets Manager appends a 6-character suffix to every secret ARN.
    statements.push({
      Sid: 'ReadReferencedSecrets',
      Effect: 'Allow',
      Action: 'secretsmanager:GetSecretValue',
      Resource: referenced.map((id) => arn('secretsmanager', `secret:${id}-??????`)),
    });
  }
  const viaServices = [{ 'Fn::Sub': 'ssm.${AWS::Region}.amazonaws.com' }];
  if (referenced.length > 0) viaServices.push({ 'Fn::Sub': 'secretsmanager.${AWS::Region}.amazonaws.com' });
  statements.push({
    Sid: 'DecryptOwnSecrets',
    Effect: 'Allow',
    Action: 'kms:Decrypt',
    Resource: kmsKeyArn || arn('kms', 'key/*'),
    Condition: { StringEquals: { 'kms:ViaService': viaServices } },
  });
  return { Version: '2012-10-17', Statement: statements };
}

function networkResources({ vpcId, subnetIds, securityGroupIds, routeTableIds, interfaceEndpoints }) {
  const resources = {};
  if (!vpcId) return resources;
  if (routeTableIds.length > 0) {
    // Gateway endpoint: free, and DynamoDB is on every request's path.
    resources.DynamoDbVpcEndpoint = {
      Type: 'AWS::EC2::VPCEndpoint',
      Properties: {
        VpcId: vpcId,
        ServiceName: { 'Fn::Sub': 'com.amazonaws.${AWS::Region}.dynamodb' },
        VpcEndpointType: 'Gateway',
        RouteTableIds: routeTableIds,
      },
    };
  }
  if (interfaceEndpoints.length > 0) {
    resources.VpcEndpointSecurityGroup = {
      Type: 'AWS::EC2::SecurityGroup',
      Properties: {
        GroupDescription: 'HTTPS from the session-lineage functions to their VPC interface endpoints',
        VpcId: vpcId,
        SecurityGroupIngress: securityGroupIds.map((sg) => ({
          IpProtocol: 'tcp',
          FromPort: 443,
          ToPort: 443,
          SourceSecurityGroupId: sg,
          Description: 'session-lineage functions',
        })),
      },
    };
    for (const service of interfaceEndpoints) {
      resources[`${INTERFACE_ENDPOINTS[service]}VpcEndpoint`] = {
        Type: 'AWS::EC2::VPCEndpoint',
        Properties: {
          VpcId: vpcId,
          ServiceName: { 'Fn::Sub': `com.amazonaws.\${AWS::Region}.${service}` },
          VpcEndpointType: 'Interface',
          PrivateDnsEnabled: true,
          SubnetIds: subnetIds,
          SecurityGroupIds: [{ Ref: 'VpcEndpointSecurityGroup' }],
        },
      };
    }
  }
  return resources;
}

module.exports = async ({ resolveVariable }) => {
  const param = async (name) => {
    const v = await resolveVariable(`param:${name}`);
    return v === null || v === undefined ? '' : String(v).trim();
  };

  // Network: Redis lives in a VPC, so the functions must too (and then need endpoints or a NAT).
  const subnetIds = ids('subnetIds', await param('subnetIds'), 'subnet');
  const securityGroupIds = ids('securityGroupIds', await param('securityGroupIds'), 'sg');
  if (subnetIds.length > 0 !== securityGroupIds.length > 0) fail('subnetIds and securityGroupIds: set both or neither');
  if (securityGroupIds.length > 5) fail('securityGroupIds: Lambda takes at most 5');
  const [vpcId] = ids('vpcId', await param('vpcId'), 'vpc');
  const routeTableIds = ids('routeTableIds', await param('routeTableIds'), 'rtb');
  const interfaceEndpoints = list(await param('interfaceEndpoints'));
  for (const s of interfaceEndpoints)
    if (!(s in INTERFACE_ENDPOINTS)) fail(`interfaceEndpoints: "${s}" is not one of ${Object.keys(INTERFACE_ENDPOINTS).join(', ')}`);
  if (vpcId && subnetIds.length === 0)
    fail('vpcId: endpoints are created only for functions in a VPC; set subnetIds and securityGroupIds too');
  if (routeTableIds.length > 0 && !vpcId) fail('routeTableIds: set vpcId too');
  const inVpc = subnetIds.length > 0;

  // Secrets: only parameter NAMES reach the template; the functions read the values at runtime.
  const redisUrlsSsmParam = ssmName('redisUrlsSsmParam', await param('redisUrlsSsmParam'));
  const openAiApiKeySsmParam = ssmName('openAiApiKeySsmParam', await param('openAiApiKeySsmParam'));
  const ssmKmsKeyArn = await param('ssmKmsKeyArn');
  if (ssmKmsKeyArn && !/^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[0-9a-f-]{36}$/.test(ssmKmsKeyArn))
    fail(`ssmKmsKeyArn: "${ssmKmsKeyArn}" must be a KMS key ARN (not an alias)`);

  const eventBusName = await param('eventBusName');
  if (!/^(arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/)?[A-Za-z0-9._\-/]{1,256}$/.test(eventBusName))
    fail(`eventBusName: "${eventBusName}" is not an event bus name or ARN`);

  const alarmTopicArn = await param('alarmTopicArn');
  if (alarmTopicArn && !/^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/.test(alarmTopicArn))
    fail(`alarmTopicArn: "${alarmTopicArn}" is not an SNS topic ARN`);

  return {
    vpc: inVpc ? { subnetIds, securityGroupIds } : null,
    // Lambda creates the functions' ENIs with the role's permissions (AWS's managed policy for exactly that).
    vpcManagedPolicyArns: inVpc
      ? [{ 'Fn::Sub': 'arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole' }]
      : [],
    networkResources: { Resources: networkResources({ vpcId, subnetIds, securityGroupIds, routeTableIds, interfaceEndpoints }) },

    redisUrlsSsmParam,
    openAiApiKeySsmParam,
    secretsPolicy: {
      // http and afterTurn compact (Redis + the summarizer's key); the sweep never compacts.
      compactor: secretsPolicy([redisUrlsSsmParam, openAiApiKeySsmParam], ssmKmsKeyArn),
      sweep: secretsPolicy([redisUrlsSsmParam], ssmKmsKeyArn),
    },

    eventBusName,
    eventBusArn: eventBusName.startsWith('arn:') ? eventBusName : arn('events', `event-bus/${eventBusName}`),

    alarmActions: alarmTopicArn ? [alarmTopicArn] : [],
    leaseUnavailableRate: num('leaseUnavailableRateThreshold', await param('leaseUnavailableRateThreshold'), { min: 0, max: 1 }),
    leaseUnavailableMinAttempts: int('leaseUnavailableMinAttempts', await param('leaseUnavailableMinAttempts'), { min: 1, max: 100000 }),
    api5xxThreshold: int('api5xxAlarmThreshold', await param('api5xxAlarmThreshold'), { min: 0, max: 1000000 }),

    reservedConcurrency: {
      http: int('httpReservedConcurrency', await param('httpReservedConcurrency'), { min: 0, max: 100000, optional: true }),
      afterTurn: int('afterTurnReservedConcurrency', await param('afterTurnReservedConcurrency'), { min: 0, max: 100000, optional: true }),
      sweep: int('sweepReservedConcurrency', await param('sweepReservedConcurrency'), { min: 0, max: 100000, optional: true }),
    },
    afterTurnMaxConcurrency: int('afterTurnMaxConcurrency', await param('afterTurnMaxConcurrency'), { min: 2, max: 1000 }),
    httpThrottleRateLimit: num('httpThrottleRateLimit', await param('httpThrottleRateLimit'), { min: 0, max: 1000000 }),
    httpThrottleBurstLimit: int('httpThrottleBurstLimit', await param('httpThrottleBurstLimit'), { min: 0, max: 1000000 }),
  };
};
