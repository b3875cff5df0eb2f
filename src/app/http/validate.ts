import type { z } from 'zod';
import { ValidationError } from '../../core/errors.js';

/** Laravel's attribute wording: `per_page` → "per page". */
function attributeName(path: readonly PropertyKey[]): string {
  const field = path.map(String).join('.');
  return field.replace(/_/g, ' ') || 'input';
}

/**
 * Schemas at our HTTP edge phrase their messages as a predicate ("must be an integer."), so that
 * the answer reads as Laravel's does: "The limit field must be an integer.". Zod's own messages
 * (types, sizes) are turned into the same form here.
 */
function phrase(issue: z.core.$ZodIssue, input: unknown): string {
  const attr = attributeName(issue.path);
  const custom = issue.message;
  if (issue.code === 'invalid_type' && input === undefined) return `The ${attr} field is required.`;
  if (/^(must|is|may|has|does|should|cannot)\b/.test(custom)) return `The ${attr} field ${custom.replace(/\.?$/, '.')}`;
  switch (issue.code) {
    case 'invalid_type':
      return input === undefined ? `The ${attr} field is required.` : `The ${attr} field must be ${article(issue.expected)}.`;
    case 'too_small':
      return issue.origin === 'string'
        ? `The ${attr} field must be at least ${String(issue.minimum)} characters.`
        : `The ${attr} field must be at least ${String(issue.minimum)}.`;
    case 'too_big':
      return issue.origin === 'string'
        ? `The ${attr} field must not be greater than ${String(issue.maximum)} characters.`
        : issue.origin === 'array'
          ? `The ${attr} field must not have more than ${String(issue.maximum)} items.`
          : `The ${attr} field must not be greater than ${String(issue.maximum)}.`;
    case 'invalid_value':
      return `The selected ${attr} is invalid.`;
    case 'unrecognized_keys':
      return `The ${attr} field has unknown keys: ${issue.keys.join(', ')}.`;
    default:
      return `The ${attr} field format is invalid.`;
  }
}

function article(expected: string): string {
  const word = expected === 'int' ? 'integer' : expected;
  return /^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = input;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

/** A request body's fields: a JSON array, string or number body has none. */
export function bodyFields(body: unknown): Record<string, unknown> {
  return body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}

/** Parses request input or throws a 422 in the Laravel shape, one list of messages per field. */
export function validate<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const errors: Record<string, string[]> = {};
  for (const issue of result.error.issues) {
    const key = issue.path.map(String).join('.') || 'input';
    (errors[key] ??= []).push(phrase(issue, valueAt(input, issue.path)));
  }
  throw new ValidationError(errors);
}
