/**
 * Sweeps every JSON endpoint with bad input: malformed JSON, bodies that are not objects, and a
 * wrong type for each declared property in an otherwise well-formed body. Every case must be a
 * 400/3001 naming the property — never a 500 — and nothing stored may change.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { sample, typesOf, type Schema } from '../../helpers/schema-samples.ts';

let t: TestContext;
beforeAll(async () => {
  t = await testApp();
});

/** A value of a JSON type the schema does not accept. */
function wrongValue(schema: Schema): unknown {
  const types = typesOf(schema);
  if (!types.includes('object')) return { wrong: true };
  if (!types.includes('string')) return 'wrong-type';
  return 12345;
}

async function tableCounts(): Promise<Record<string, number>> {
  const tables = await t.db.raw(
    "select table_name from information_schema.tables where table_schema = 'public' and table_name not like 'knex_%'",
  );
  const counts: Record<string, number> = {};
  for (const { table_name } of tables.rows as Array<{ table_name: string }>) {
    const [row] = await t.db(table_name).count({ n: '*' });
    counts[table_name] = Number(row?.n);
  }
  return counts;
}

function jsonRoutes() {
  return t.app.routeCatalog.filter((r) => r.bodySchema && ['POST', 'PUT', 'DELETE'].includes(r.method));
}

describe('bad input on every JSON endpoint', () => {
  it('covers the topology endpoints', () => {
    expect(jsonRoutes().length).toBeGreaterThan(10);
  });

  it('answers 400/3001 to malformed JSON and to bodies that are not objects, and stores nothing', async () => {
    const before = await tableCounts();
    const failures: string[] = [];
    for (const route of jsonRoutes()) {
      for (const payload of ['{"name":', '{', '[]', '"text"', '42', 'null', '{"a":1}}']) {
        const response = await t.admin.raw({
          method: route.method,
          path: route.url,
          payload,
          headers: { 'content-type': 'application/json' },
        });
        if (response.status !== 400 || response.body?.errorcode !== 3001)
          failures.push(`${route.method} ${route.url} ${payload} → ${response.status}`);
      }
    }
    expect(failures).toEqual([]);
    expect(await tableCounts()).toEqual(before);
  });

  it('answers 400 naming the property when one property has the wrong type, and stores nothing', async () => {
    const before = await tableCounts();
    const failures: string[] = [];
    let cases = 0;
    for (const route of jsonRoutes()) {
      const schema = route.bodySchema as Schema;
      const valid = sample(schema) as Record<string, unknown>;
      for (const [name, property] of Object.entries(schema.properties ?? {})) {
        cases++;
        const body = { ...valid, [name]: wrongValue(property) };
        const response = await t.admin.raw({
          method: route.method,
          path: route.url,
          payload: JSON.stringify(body),
          headers: { 'content-type': 'application/json' },
        });
        const property0 = response.body?.validationErrors?.[0]?.property as string | undefined;
        if (response.status !== 400 || !property0?.startsWith(name)) {
          failures.push(`${route.method} ${route.url} ${name} → ${response.status} ${response.text.slice(0, 100)}`);
        }
      }
    }
    expect(cases).toBeGreaterThan(30);
    expect(failures).toEqual([]);
    expect(await tableCounts()).toEqual(before);
  });

  it('answers 415 to a non-JSON content type on every JSON endpoint', async () => {
    const failures: string[] = [];
    for (const route of jsonRoutes()) {
      const response = await t.admin.raw({
        method: route.method,
        path: route.url,
        payload: 'a=b',
        headers: { 'content-type': 'text/plain' },
      });
      if (response.status !== 415) failures.push(`${route.method} ${route.url} → ${response.status}`);
    }
    expect(failures).toEqual([]);
  });

  it('answers 400 to non-numeric and non-boolean query parameters on every GET', async () => {
    const document = t.app.swagger() as {
      paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string; schema: Schema }> }>>;
    };
    const failures: string[] = [];
    let cases = 0;
    for (const [path, operations] of Object.entries(document.paths)) {
      const parameters = operations.get?.parameters?.filter((p) => p.in === 'query') ?? [];
      for (const parameter of parameters) {
        const types = typesOf(parameter.schema);
        if (!types.some((type) => ['integer', 'number', 'boolean'].includes(type))) continue;
        cases++;
        const response = await t.admin.get(path, { [parameter.name]: 'not-a-value' });
        if (response.status !== 400) failures.push(`GET ${path} ${parameter.name} → ${response.status}`);
      }
    }
    expect(cases).toBeGreaterThan(3);
    expect(failures).toEqual([]);
  });
});
