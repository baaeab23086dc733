// Building blocks of item validation: zod/mini schemas (no locale bundled, so every message
// is ours), a translator from a zod issue to "field path + clear message", and the content-part
// check both formats share. Schemas are loose objects: unknown fields pass and are never copied
// into the result (validation returns the client's own objects).
import * as z from 'zod/mini';
import type { $ZodIssue } from 'zod/v4/core';
import { isRecord } from './json.js';
import { safeParse } from '../validation.js';

/** What is wrong inside one item: `path` like `tool_calls[0].id` ('' for the item itself). */
export interface FieldProblem {
  path: string;
  message: string;
}

export type Schema = z.ZodMiniType;
type Segment = PropertyKey;

export const optionalString = z.optional(z.string());
export const nullableString = z.optional(z.nullable(z.string()));
/** Any JSON object (fields inside are the client's). */
export const anyObject = z.looseObject({});
/** Every item may carry our own `synthetic` flag (SPEC C8 scaffolding). */
export const syntheticFlag = { synthetic: z.optional(z.boolean()) };

export function formatPath(segments: readonly Segment[]): string {
  let out = '';
  for (const s of segments) out += typeof s === 'number' ? `[${s}]` : out ? `.${String(s)}` : String(s);
  return out;
}

export function joinPath(prefix: string, path: string): string {
  if (!prefix) return path;
  if (!path) return prefix;
  return path.startsWith('[') ? `${prefix}${path}` : `${prefix}.${path}`;
}

/** The first problem `schema` finds in `value`, or undefined. */
export function schemaProblem(schema: Schema, value: unknown, prefix = ''): FieldProblem | undefined {
  const result = safeParse(schema, value);
  if (result.success) return undefined;
  const issue = result.error.issues[0];
  if (!issue) return { path: prefix, message: 'invalid' };
  const problem = describeIssue(issue, value, []);
  return { path: joinPath(prefix, problem.path), message: problem.message };
}

function describeIssue(issue: $ZodIssue, root: unknown, base: readonly Segment[]): FieldProblem {
  const segments = [...base, ...issue.path];
  const path = formatPath(segments);
  switch (issue.code) {
    case 'invalid_union': {
      // The option the value got furthest into (a problem below the union's own level) says what is wrong.
      const deeper = issue.errors.filter((errs) => errs.some((e) => e.path.length > 0));
      if (deeper.length === 1 && deeper[0]![0]) return describeIssue(deeper[0]![0], root, segments);
      if (issue.message && issue.message !== 'Invalid input')
        return { path, message: `${issue.message}, got ${kindOf(valueAt(root, segments))}` };
      const expected = [...new Set(issue.errors.flatMap((errs) => (errs[0]?.code === 'invalid_type' ? [article(errs[0].expected)] : [])))];
      return { path, message: `expected ${orList(expected)}, got ${kindOf(valueAt(root, segments))}` };
    }
    case 'invalid_type': {
      const value = valueAt(root, segments);
      const expected = article(issue.expected);
      return { path, message: value === undefined ? `missing; expected ${expected}` : `expected ${expected}, got ${kindOf(value)}` };
    }
    case 'invalid_value':
      return {
        path,
        message:
          issue.values.length === 1
            ? `expected ${JSON.stringify(issue.values[0])}`
            : `expected one of ${issue.values.map(String).join(', ')}`,
      };
    default:
      return { path, message: issue.message || 'invalid' };
  }
}

/**
 * Content parts: each an object with a string `type`; known types are checked with their
 * schema, unknown ones are kept as they are (SPEC A1).
 */
export function partsProblem(
  parts: readonly unknown[],
  schemas: Readonly<Record<string, Schema>>,
  prefix: string,
): FieldProblem | undefined {
  for (let i = 0; i < parts.length; i++) {
    const problem = partProblem(parts[i], schemas, `${prefix}[${i}]`);
    if (problem) return problem;
  }
  return undefined;
}

const typedObject = z.looseObject({ type: z.string() });

export function partProblem(part: unknown, schemas: Readonly<Record<string, Schema>>, path: string): FieldProblem | undefined {
  if (!isRecord(part)) return { path, message: `expected a content part (an object with a string "type"), got ${kindOf(part)}` };
  const typed = schemaProblem(typedObject, part, path);
  if (typed) return typed;
  const schema = Object.hasOwn(schemas, part.type as string) ? schemas[part.type as string] : undefined;
  return schema ? schemaProblem(schema, part, path) : undefined;
}

/** `content`: a string or an array of parts; null or absent only when `nullable`. `note` explains when it may be. */
export function contentProblem(
  content: unknown,
  schemas: Readonly<Record<string, Schema>>,
  nullable: boolean,
  note = '',
): FieldProblem | undefined {
  if (typeof content === 'string') return undefined;
  if (Array.isArray(content)) return partsProblem(content, schemas, 'content');
  if ((content === null || content === undefined) && nullable) return undefined;
  const expected = `expected a string or an array of content parts${note ? ` (${note})` : ''}`;
  return { path: 'content', message: content === undefined ? `missing; ${expected}` : `${expected}, got ${kindOf(content)}` };
}

/** A required choice among known names: "unknown role \"bot\"; expected one of ...". */
export function choiceProblem(value: unknown, allowed: readonly string[], field: string): FieldProblem | undefined {
  if (typeof value === 'string' && allowed.includes(value)) return undefined;
  const expected = `expected one of ${allowed.join(', ')}`;
  if (value === undefined) return { path: field, message: `missing; ${expected}` };
  if (typeof value !== 'string') return { path: field, message: `${expected}, got ${kindOf(value)}` };
  return { path: field, message: `unknown ${field} ${JSON.stringify(value)}; ${expected}` };
}

export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value === undefined) return 'nothing';
  return article(typeof value);
}

function article(name: string): string {
  if (name === 'null' || name === 'undefined') return name;
  return /^[aeiou]/.test(name) ? `an ${name}` : `a ${name}`;
}

function orList(names: readonly string[]): string {
  if (names.length <= 1) return names[0] ?? 'something else';
  return `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}`;
}

function valueAt(root: unknown, segments: readonly Segment[]): unknown {
  let v = root;
  for (const s of segments) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<PropertyKey, unknown>)[s];
  }
  return v;
}
