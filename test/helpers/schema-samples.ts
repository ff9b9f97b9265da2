/** JSON-schema walking shared by the endpoint sweeps (bad input, isolation): valid sample values. */
export interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  const?: unknown;
  enum?: unknown[];
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  minItems?: number;
  pattern?: string;
  format?: string;
}

/** Every JSON type the schema (or any branch of it) accepts. */
export function typesOf(schema: Schema): string[] {
  const own = schema.type === undefined ? [] : [schema.type].flat();
  return [
    ...own,
    ...(schema.anyOf ?? []).flatMap(typesOf),
    ...(schema.const !== undefined ? [typeof schema.const] : []),
  ];
}

/** A value the schema accepts; objects get their required properties. */
export function sample(schema: Schema): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  if (schema.anyOf) return sample(schema.anyOf.find((b) => b.type !== 'null') ?? schema.anyOf[0]!);
  switch ([schema.type].flat()[0]) {
    case 'string':
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    case 'array':
      return (schema.minItems ?? 0) > 0 && schema.items ? [sample(schema.items)] : [];
    case 'object':
      return Object.fromEntries((schema.required ?? []).map((name) => [name, sample(schema.properties![name]!)]));
    default:
      return 'x';
  }
}
