/**
 * Response schemas as fast-json-stringify serialises them fastest, without changing what
 * they mean. fast-json-stringify writes a union (`anyOf`) by running an Ajv validator per
 * branch on every response until one matches; the API's schemas are full of unions that
 * need no validator: string literals (`state`, `billing_mode`, ...) and "X or null". Those
 * are rewritten to the equivalent `enum` and `type: [X, "null"]`, which it writes with a
 * typeof check. The route keeps its TypeBox schemas for validation and the OpenAPI document;
 * only the copy the serialiser compiles is rewritten.
 */
import type { App } from './types.js';

type Schema = Record<string, unknown>;

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The string constants of a union of string literals, or null for any other union. */
function literals(branches: unknown[]): string[] | null {
  const values: string[] = [];
  for (const b of branches) {
    if (!isSchema(b) || typeof b.const !== 'string') return null;
    values.push(b.const);
  }
  return values;
}

/** An equivalent schema without the unions fast-json-stringify would validate per response. */
export function forSerializer(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(forSerializer);
  if (!isSchema(schema)) return schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    out[key] =
      key === 'properties' && isSchema(value)
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, forSerializer(v)]))
        : forSerializer(value);
  }
  const anyOf = out.anyOf;
  if (!Array.isArray(anyOf)) return out;
  const { anyOf: _union, ...rest } = out;
  const consts = literals(anyOf);
  if (consts) return { ...rest, type: 'string', enum: consts };
  // X | null, where X has one type of its own: the same schema with null as a second type.
  const nonNull = anyOf.filter((b) => !(isSchema(b) && b.type === 'null'));
  const only = nonNull[0];
  if (anyOf.length === 2 && nonNull.length === 1 && isSchema(only) && typeof only.type === 'string') {
    return {
      ...rest,
      ...only,
      type: [only.type, 'null'],
      ...(Array.isArray(only.enum) ? { enum: [...only.enum, null] } : {}),
    };
  }
  return out;
}

/** Rewrites each route's response schemas for the serialiser as the route is added. */
export function installFastSerialization(app: App): void {
  app.addHook('onRoute', (route) => {
    const response = route.schema?.response;
    if (!isSchema(response)) return;
    // A new schema object: the original (recorded for OpenAPI) stays as it was.
    route.schema = {
      ...route.schema,
      response: Object.fromEntries(Object.entries(response).map(([status, s]) => [status, forSerializer(s)])),
    };
  });
}
