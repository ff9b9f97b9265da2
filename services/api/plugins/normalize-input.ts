/**
 * Real clients send `projectid` and `skipLogs=False` (contract §1): before validation, rename
 * body and query keys to the schema's spelling, case-insensitively, at every depth, and accept
 * booleans in any case. An empty query value for a non-string parameter counts as absent
 * (`getLogsAfter=` from the PowerShell client).
 */
import type { FastifyInstance } from 'fastify';

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
    }
  }
  return value;
}

export function registerInputNormalization(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    const schema = request.routeOptions.schema;
    if (!schema) return;
    if (schema.body && request.body !== undefined) {
      request.body = normalizeKeys(request.body, schema.body, false);
    }
    if (schema.querystring && request.query) {
      request.query = normalizeKeys(request.query, schema.querystring, true);
    }
  });
}
