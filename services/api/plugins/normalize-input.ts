/**
 * Real clients send `projectid` and `skipLogs=False` (contract §1): before validation, rename
 * body and query keys to the schema's spelling, case-insensitively, at every depth, and accept
 * booleans in any case. An empty query value for a non-string parameter counts as absent
 * (`getLogsAfter=` from the PowerShell client).
 *
 * And what no schema expresses, for every route at once: text PostgreSQL cannot store as sent
 * (NUL, lone surrogates) is refused naming the property, and a query integer must be written as
 * one (`0x1F`, `1e3`, `Infinity` are coerced to numbers by Ajv otherwise).
 */
import type { FastifyInstance } from 'fastify';
import { findUnstorableText, InvalidParameterError } from '../../core/index.ts';

interface SchemaNode {
  type?: string | string[];
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  anyOf?: SchemaNode[];
  oneOf?: SchemaNode[];
  allOf?: SchemaNode[];
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

function branches(schema: SchemaNode): SchemaNode[] {
  return [schema, ...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])];
}

function propertiesOf(schema: SchemaNode): Record<string, SchemaNode> | null {
  const merged: Record<string, SchemaNode> = {};
  let found = false;
  for (const branch of branches(schema)) {
    if (branch.properties) {
      Object.assign(merged, branch.properties);
      found = true;
    }
  }
  return found ? merged : null;
}

function typesOf(schema: SchemaNode): string[] {
  return branches(schema).flatMap((b) => (b.type === undefined ? [] : Array.isArray(b.type) ? b.type : [b.type]));
}

export function normalizeKeys(value: unknown, schema: SchemaNode | undefined, fromQuery: boolean): unknown {
  if (!schema) return value;
  if (Array.isArray(value)) {
    const item = branches(schema).find((b) => b.items)?.items;
    return value.map((v) => normalizeKeys(v, item, fromQuery));
  }
  if (value !== null && typeof value === 'object') {
    const properties = propertiesOf(schema);
    if (!properties) return value;
    const canonical = new Map(Object.keys(properties).map((k) => [k.toLowerCase(), k]));
    const input = value as Record<string, unknown>;
    const output: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(input)) {
      if (FORBIDDEN_KEYS.has(key)) continue;
      const name = canonical.get(key.toLowerCase()) ?? key;
      // An exact spelling wins over a case variant of the same key.
      if (name !== key && Object.hasOwn(input, name)) continue;
      const normalized = normalizeKeys(inner, properties[name], fromQuery);
      if (normalized !== undefined) output[name] = normalized;
    }
    return output;
  }
  if (fromQuery && typeof value === 'string') {
    const types = typesOf(schema);
    if (types.length > 0 && !types.includes('string')) {
      if (value === '') return undefined;
      if (types.includes('boolean') && /^(true|false)$/i.test(value)) return value.toLowerCase();
      if ((types.includes('integer') || types.includes('number')) && !/^-?\d{1,16}$/.test(value)) return NOT_AN_INTEGER;
    }
  }
  return value;
}

/** Stands in for query text that is not a decimal integer: refused by name below. */
const NOT_AN_INTEGER = Symbol('not an integer');

function refuseMalformed(value: unknown, where: 'body' | 'query'): void {
  const kind = where === 'body' ? 'body property' : 'query parameter';
  const property = findUnstorableText(value);
  if (property !== null) {
    throw new InvalidParameterError(`Invalid ${kind} '${property}': text must not contain NUL or unpaired surrogates`, [
      { property, messages: ['contains NUL or an unpaired surrogate'] },
    ]);
  }
  if (where === 'query' && value !== null && typeof value === 'object') {
    for (const [name, item] of Object.entries(value)) {
      if (item === NOT_AN_INTEGER) {
        throw new InvalidParameterError(`Invalid ${kind} '${name}': must be a decimal integer`, [
          { property: name, messages: ['must be a decimal integer'] },
        ]);
      }
    }
  }
}

export function registerInputNormalization(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    const schema = request.routeOptions.schema;
    refuseMalformed(request.query, 'query');
    if (request.body !== undefined) refuseMalformed(request.body, 'body');
    if (!schema) return;
    if (schema.body && request.body !== undefined) {
      request.body = normalizeKeys(request.body, schema.body, false);
    }
    if (schema.querystring && request.query) {
      request.query = normalizeKeys(request.query, schema.querystring, true);
      refuseMalformed(request.query, 'query');
    }
  });
}
