/**
 * A schema-driven fuzz sweep over every operation of the OpenAPI document: each request starts
 * valid (real references to one resource of every type) and gets one hostile value — NUL, a lone
 * surrogate, a string one past its bound, integers beyond what the store holds, the wrong type,
 * deep nesting, malformed query numbers, bad credentials, malformed multipart. Every answer must
 * be below 500 with the spec's error body, and no stored row may change (every case is invalid).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type Response, type TestContext } from '../../helpers/app.ts';
import { build, buildQuery, createResourceSet, snapshot, type ResourceSet } from '../../helpers/route-requests.ts';
import { typesOf, type Schema } from '../../helpers/schema-samples.ts';

let t: TestContext;
let set: ResourceSet;

interface Operation {
  method: string;
  path: string;
  query: Array<{ name: string; schema: Schema }>;
  body: Schema | undefined;
}

interface Case {
  what: string;
  method: string;
  url: string;
  payload?: string;
  headers?: Record<string, string>;
  /** Bad credentials: the answer must be 401/2002. */
  expectCredentials?: boolean;
  /** Valid after all (a query decoded with replacement characters): only "no 5xx" applies. */
  mayBeAccepted?: boolean;
}

/** Stands in for a JSON literal JSON.stringify cannot write (1e309, 2^63 exactly). */
const RAW = '__raw_json__';

function operations(): Operation[] {
  const document = t.app.swagger() as {
    paths: Record<
      string,
      Record<string, { parameters?: Array<{ in: string; name: string; schema: Schema }>; requestBody?: unknown }>
    >;
  };
  const found: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const route = t.app.routeCatalog.find(
        (r) => r.url.replace(/:(\w+)/g, '{$1}') === path && r.method === method.toUpperCase(),
      );
      found.push({
        method: method.toUpperCase(),
        path,
        query: (operation.parameters ?? [])
          .filter((p) => p.in === 'query')
          .map((p) => ({ name: p.name, schema: p.schema })),
        body: route?.bodySchema as Schema | undefined,
      });
    }
  }
  return found;
}

/** Every property path of a body schema, with its schema (objects and array items walked). */
function leaves(schema: Schema, path: string[] = []): Array<{ path: string[]; schema: Schema }> {
  const nonNull = schema.anyOf?.find((b) => b.type !== 'null') ?? schema;
  const own = path.length > 0 ? [{ path, schema: nonNull }] : [];
  if (nonNull.properties) {
    return [...own, ...Object.entries(nonNull.properties).flatMap(([name, child]) => leaves(child, [...path, name]))];
  }
  return own;
}

function setAt(body: unknown, path: string[], value: unknown): unknown {
  const [head, ...rest] = path;
  if (head === undefined) return value;
  const object = body !== null && typeof body === 'object' && !Array.isArray(body) ? body : {};
  return { ...object, [head]: setAt((object as Record<string, unknown>)[head], rest, value) };
}

/** Values that no schema may accept for this property. */
function hostileValues(schema: Schema): Array<{ what: string; value: unknown; raw?: string }> {
  const types = typesOf(schema);
  const values: Array<{ what: string; value: unknown; raw?: string }> = [];
  if (types.includes('string')) {
    values.push({ what: 'NUL', value: 'before\u0000after' }, { what: 'lone surrogate', value: 'a\ud800b' });
    values.push({ what: 'one past maxLength', value: 'x'.repeat((schema.maxLength ?? 1 << 20) + 1) });
  }
  if (types.includes('integer') || types.includes('number')) {
    values.push(
      { what: '2^31', value: RAW, raw: '2147483648' },
      { what: '2^63', value: RAW, raw: '9223372036854775808' },
      { what: '-2^63-1', value: RAW, raw: '-9223372036854775809' },
      { what: '1e309', value: RAW, raw: '1e309' },
    );
  }
  if (types.includes('array')) values.push({ what: 'array of NUL', value: ['\u0000'] });
  values.push({ what: 'wrong type', value: types.includes('object') ? 'text' : { nested: true } });
  return values;
}

function bodyCases(operation: Operation, valid: Record<string, unknown>): Case[] {
  const cases: Case[] = [];
  const json = { 'content-type': 'application/json' };
  for (const leaf of leaves(operation.body!)) {
    for (const hostile of hostileValues(leaf.schema)) {
      const text = JSON.stringify(setAt(valid, leaf.path, hostile.value)).replace(`"${RAW}"`, hostile.raw ?? '');
      cases.push({
        what: `${leaf.path.join('.')}: ${hostile.what}`,
        method: operation.method,
        url: operation.path,
        payload: text,
        headers: json,
      });
    }
  }
  const deep = '['.repeat(5000) + ']'.repeat(5000);
  const first = Object.keys(operation.body!.properties ?? {})[0] ?? 'x';
  const nested = JSON.stringify(setAt(valid, [first], RAW)).replace(`"${RAW}"`, deep);
  cases.push(
    { what: 'deeply nested body', method: operation.method, url: operation.path, payload: nested, headers: json },
    { what: 'NUL in a key', method: operation.method, url: operation.path, payload: '{"a\\u0000b":1}', headers: json },
    {
      what: 'body over the size limit',
      method: operation.method,
      url: operation.path,
      payload: JSON.stringify({ ...valid, padding: 'x'.repeat(5 * 1024 * 1024) }),
      headers: json,
    },
  );
  return cases;
}

function queryCases(operation: Operation, valid: Record<string, unknown>): Case[] {
  const base = Object.entries(valid).map(([k, v]): [string, string] => [k, String(v)]);
  const cases: Case[] = [];
  for (const parameter of operation.query) {
    const numeric = typesOf(parameter.schema).some((type) => type === 'integer' || type === 'number');
    const encoded: Array<[string, string]> = [
      ['NUL', '%00'],
      ['invalid UTF-8 (a surrogate)', '%ED%A0%80'],
      ['one past maxLength', 'x'.repeat((parameter.schema.maxLength ?? 1 << 16) + 1)],
    ];
    if (numeric || /tick|after/i.test(parameter.name)) {
      encoded.push(
        ['1e309', '1e309'],
        ['Infinity', 'Infinity'],
        ['hexadecimal', '0x1F'],
        ['25 nines', '9'.repeat(25)],
        ['2^63', '9223372036854775808'],
        ['2^64', '18446744073709551616'],
        ['-1', '-1'],
        ['a fraction', '1.5'],
      );
    }
    for (const [what, raw] of encoded) {
      const others = base.filter(([k]) => k !== parameter.name).map(([k, v]) => `${k}=${encodeURIComponent(v)}`);
      cases.push({
        what: `?${parameter.name}: ${what}`,
        method: operation.method,
        url: `${operation.path}?${[...others, `${parameter.name}=${raw}`].join('&')}`,
        // Invalid UTF-8 in a URL decodes to U+FFFD: well-formed text, and GETs change nothing.
        mayBeAccepted: what.startsWith('invalid UTF-8') && !numeric,
      });
    }
  }
  return cases;
}

function credentialCases(operation: Operation): Case[] {
  const basic = (text: string) => `Basic ${Buffer.from(text).toString('base64')}`;
  return [
    ['NUL in the account ID', basic('a\u0000b:x')],
    ['NUL in the key', basic('test-admin:k\u0000')],
    ['lone surrogate in the account ID', `Basic ${Buffer.from('a\ud800b:x', 'utf8').toString('base64')}`],
    ['invalid UTF-8 in the account ID', `Basic ${Buffer.from([0x61, 0xff, 0xfe, 0x3a, 0x78]).toString('base64')}`],
    ['an account ID of 10,000 characters', basic(`${'a'.repeat(10_000)}:x`)],
  ].map(([what, authorization]) => ({
    what: `credentials: ${what}`,
    method: operation.method,
    url: `${operation.path}?workspaceId=${set.workspace}`,
    headers: { authorization: authorization! },
    expectCredentials: true,
  }));
}

function multipartCases(): Case[] {
  const url = '/api/packagestore/package';
  const file = `--B\r\nContent-Disposition: form-data; name="workspaceId"\r\n\r\n${set.workspace}\r\n--B\r\nContent-Disposition: form-data; name="PackageFile"; filename="Fz.Multi.1.0.0.zip"\r\nContent-Type: application/zip\r\n\r\nPK\u0003\u0004`;
  return [
    ['no boundary', 'multipart/form-data', file + '\r\n--B--\r\n'],
    ['a wrong boundary', 'multipart/form-data; boundary=Other', file + '\r\n--B--\r\n'],
    ['no trailer', 'multipart/form-data; boundary=B', file + '\r\n'],
    ['truncated mid-file', 'multipart/form-data; boundary=B', file],
    ['a malformed part header', 'multipart/form-data; boundary=B', '--B\r\nContent-Disposition\r\n\r\nx\r\n--B--\r\n'],
    ['only the trailer', 'multipart/form-data; boundary=B', '--B--\r\n'],
    [
      'NUL in the workspace field',
      'multipart/form-data; boundary=B',
      file.replace(set.workspace, 'a\u0000b') + '\r\n--B--\r\n',
    ],
  ].map(([what, type, payload]) => ({
    what: `multipart: ${what}`,
    method: 'POST',
    url,
    payload: payload!,
    headers: { 'content-type': type! },
  }));
}

function pathCases(): Case[] {
  return ['/api/project%00', '/api/%00', '/api/project/%ED%A0%80', `/api/${'x'.repeat(10_000)}`].map((url) => ({
    what: `path ${url.slice(0, 30)}`,
    method: 'GET',
    url,
  }));
}

function problemOf(test: Case, response: Response): string | null {
  const body = response.body as { error?: unknown; errorcode?: unknown; requestid?: unknown } | undefined;
  const shaped =
    typeof body?.error === 'string' && typeof body?.errorcode === 'number' && body !== undefined && 'requestid' in body;
  if (response.status >= 500) return `${response.status} ${response.text.slice(0, 120)}`;
  if (response.status < 400) return test.mayBeAccepted ? null : `accepted with ${response.status}`;
  if (!shaped) return `${response.status} without the spec's error body: ${response.text.slice(0, 120)}`;
  if (test.expectCredentials && (response.status !== 401 || body.errorcode !== 2002))
    return `credentials answered ${response.status}/${String(body.errorcode)}`;
  return null;
}

beforeAll(async () => {
  t = await testApp();
  set = await createResourceSet(t, t.mainWorkspaceId, 'fz', 'Fz');
});

describe('fuzz sweep over every OpenAPI operation', () => {
  it('answers every hostile request below 500 with the spec error body, and changes no stored row', async () => {
    const before = await snapshot(t);
    const failures: string[] = [];
    const all = operations();
    const cases: Case[] = [...multipartCases(), ...pathCases()];
    for (const operation of all) {
      const route = t.app.routeCatalog.find(
        (r) => r.url.replace(/:(\w+)/g, '{$1}') === operation.path && r.method === operation.method,
      );
      if (!route) throw new Error(`no route for ${operation.method} ${operation.path}`);
      if (route.isPublic) continue;
      cases.push(...credentialCases(operation));
      if (operation.method === 'GET') {
        cases.push(
          ...queryCases(
            operation,
            buildQuery(t, route, (_, key) => set[key], []),
          ),
        );
      } else if (operation.body) {
        const valid = build(operation.body, '', operation.path, (_, key) => set[key], []) as Record<string, unknown>;
        cases.push(...bodyCases(operation, valid));
      }
    }
    for (const test of cases) {
      const response = await t.admin
        .raw({
          method: test.method,
          path: test.url,
          ...(test.payload === undefined ? {} : { payload: test.payload }),
          headers: test.headers ?? {},
        })
        .catch((error: unknown) => error as Error);
      if (response instanceof Error) {
        failures.push(`${test.method} ${test.url.slice(0, 80)} [${test.what}] → ${response.message}`);
        continue;
      }
      const problem = problemOf(test, response);
      if (problem) failures.push(`${test.method} ${test.url.slice(0, 80)} [${test.what}] → ${problem}`);
    }
    console.info(`fuzz sweep: ${cases.length} requests over ${all.length} operations, ${failures.length} failures`);
    expect(all.length).toBeGreaterThan(100);
    expect(cases.length).toBeGreaterThan(2000);
    expect(failures).toEqual([]);
    expect(await snapshot(t)).toEqual(before);
  }, 240_000);
});

describe('request schemas', () => {
  it('bound every integer to what the store holds and every string in length', () => {
    const unbounded: string[] = [];
    const walk = (schema: Schema, where: string): void => {
      for (const branch of [schema, ...(schema.anyOf ?? [])]) {
        const types = [branch.type].flat();
        if (
          types.includes('integer') &&
          (branch.minimum === undefined || (branch as { maximum?: number }).maximum === undefined)
        )
          unbounded.push(`${where}: integer without minimum and maximum`);
        if (types.includes('string') && branch.maxLength === undefined && branch.const === undefined && !branch.enum)
          unbounded.push(`${where}: string without maxLength`);
        for (const [name, child] of Object.entries(branch.properties ?? {})) walk(child, `${where}.${name}`);
        if (branch.items) walk(branch.items, `${where}[]`);
      }
    };
    for (const operation of operations()) {
      if (operation.body) walk(operation.body, `${operation.method} ${operation.path} body`);
      for (const parameter of operation.query)
        walk(parameter.schema, `${operation.method} ${operation.path} ?${parameter.name}`);
    }
    expect(unbounded).toEqual([]);
  });
});
