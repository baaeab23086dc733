// Builds DynamoDB expression parameters: every `#name` becomes an attribute-name placeholder and
// only the `:values` an expression actually uses are sent (DynamoDB rejects unused ones).
export interface ExpressionParts {
  update?: string;
  condition?: string;
  keyCondition?: string;
}

export interface ExpressionParams {
  UpdateExpression?: string;
  ConditionExpression?: string;
  KeyConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
}

export function expression(parts: ExpressionParts, values: Record<string, unknown> = {}): ExpressionParams {
  const text = [parts.update, parts.condition, parts.keyCondition].filter(Boolean).join(' ');
  const names: Record<string, string> = {};
  for (const m of text.matchAll(/#(\w+)/g)) names[m[0]] = m[1] as string;
  const used: Record<string, unknown> = {};
  for (const m of text.matchAll(/:(\w+)/g)) {
    if (!(m[0] in values)) throw new Error(`expression uses ${m[0]} without a value`);
    used[m[0]] = values[m[0]];
  }
  const out: ExpressionParams = {};
  if (parts.update) out.UpdateExpression = parts.update;
  if (parts.condition) out.ConditionExpression = parts.condition;
  if (parts.keyCondition) out.KeyConditionExpression = parts.keyCondition;
  if (Object.keys(names).length) out.ExpressionAttributeNames = names;
  if (Object.keys(used).length) out.ExpressionAttributeValues = used;
  return out;
}

/** For transaction Update entries, whose type requires the update expression. */
export function updateExpression(
  parts: ExpressionParts & { update: string },
  values: Record<string, unknown> = {},
): ExpressionParams & { UpdateExpression: string } {
  return { ...expression(parts, values), UpdateExpression: parts.update };
}
