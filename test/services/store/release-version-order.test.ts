// releases.version_order (migration 202611250900): PostgreSQL's semver_order_key must order
// versions exactly as SemVer precedence does (compareSemVer, node-semver), since "the highest
// release" and "the releases equivalent to 6.1" are now read by it instead of in Node.
import { randomInt } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { compareSemVer, expandQuery, isValidSemVer } from '../../../services/core/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;

beforeAll(async () => {
  t = await testApp();
});

async function keysOf(versions: string[]): Promise<Map<string, string | null>> {
  const { rows } = await t.db.raw<{ rows: Array<{ v: string; k: string | null }> }>(
    'SELECT v, semver_order_key(v) AS k FROM unnest(?::text[]) AS v',
    [versions],
  );
  return new Map(rows.map((r) => [r.v, r.k]));
}

/** Sorted by the key's bytes ("C" collation, as the column), ties by version text. */
async function sortedInSql(versions: string[]): Promise<string[]> {
  const { rows } = await t.db.raw<{ rows: Array<{ v: string }> }>(
    'SELECT v FROM unnest(?::text[]) AS v ORDER BY semver_order_key(v) COLLATE "C", v COLLATE "C"',
    [versions],
  );
  return rows.map((r) => r.v);
}

const byPrecedence = (versions: string[]) =>
  [...versions].sort((a, b) => compareSemVer(a, b) || (a < b ? -1 : a > b ? 1 : 0));

describe('semver_order_key', () => {
  it("orders semver.org's precedence example and the edge cases as SemVer does", async () => {
    const versions = [
      '1.0.0',
      '1.0.0-rc.1',
      '1.0.0-beta.11',
      '1.0.0-beta.2',
      '1.0.0-beta',
      '1.0.0-alpha.beta',
      '1.0.0-alpha.1',
      '1.0.0-alpha',
      '10.0.0',
      '9.0.0',
      '2.10.0',
      '2.9.9',
      '1.0.0-1',
      '1.0.0-a',
      '1.0.0-alpha-1',
      '1.0.0-alpha0',
      '1.0.0-Alpha',
      '1.0.0-0.3.7',
      '1.0.0-x.7.z.92',
      '1.0.0-2',
      '1.0.0-10',
      '9007199254740991.0.0',
      '0.0.0',
      '1.0.0-alpha.1.2',
      '1.0.0-123456789012345678901234',
      '1.0.0-99',
      '1.0.0-x.123456789012345678901234',
      '1.0.0-x.9007199254740993',
    ];
    expect(await sortedInSql(versions)).toEqual(byPrecedence(versions));
  });

  it('gives equal keys exactly to versions of equal precedence (build metadata ignored)', async () => {
    const keys = await keysOf(['1.0.0+a', '1.0.0+b.2', '1.0.0', '1.0.0-rc.1+x', '1.0.0-rc.1', '1.0.0-rc.1.0']);
    expect(keys.get('1.0.0+a')).toBe(keys.get('1.0.0'));
    expect(keys.get('1.0.0+b.2')).toBe(keys.get('1.0.0'));
    expect(keys.get('1.0.0-rc.1+x')).toBe(keys.get('1.0.0-rc.1'));
    expect(keys.get('1.0.0-rc.1.0')).not.toBe(keys.get('1.0.0-rc.1'));
    expect(keys.get('1.0.0-rc.1')).not.toBe(keys.get('1.0.0'));
  });

  // Spec §9's SemVer-equivalent lookups (release reads, deployment lists — never promote): a
  // 1- or 2-part numeric query is completed with zeros, then matched by precedence.
  it.each([
    ['6.1', '6.1.0', true],
    ['6', '6.0.0', true],
    ['6.1.0', '6.1.0', true],
    ['6.1', '6.1.0+build.7', true],
    ['6.1.0+other', '6.1.0+build.7', true],
    ['6.1', '6.1.1', false],
    ['6.1', '6.1.0-rc.1', false],
    ['v6.1.0', '6.1.0', false],
    ['06.1', '6.1.0', false],
    ['6.1.0.0', '6.1.0', false],
    ['6.1.0', '6.1', false],
  ])('query %s finds %s: %s', async (query, stored, expected) => {
    const expanded = expandQuery(query);
    const keys = await keysOf(expanded === null ? [stored] : [expanded, stored]);
    expect(expanded !== null && keys.get(stored) !== null && keys.get(expanded) === keys.get(stored)).toBe(expected);
  });

  it('orders random versions as node-semver does', async () => {
    const identifiers = [
      '0',
      '1',
      '2',
      '9',
      '10',
      '11',
      '99',
      'a',
      'b',
      'A',
      'Z',
      'alpha',
      'alph',
      'x-1',
      '-',
      'a-',
      '1a',
    ];
    const pick = <T>(list: readonly T[]) => list[randomInt(list.length)]!;
    const versions = new Set<string>();
    while (versions.size < 400) {
      let v = `${randomInt(3)}.${pick([0, 1, 2, 10])}.${pick([0, 1, 9, 10, 11])}`;
      if (randomInt(3) > 0) v += '-' + Array.from({ length: 1 + randomInt(3) }, () => pick(identifiers)).join('.');
      if (randomInt(5) === 0) v += `+build.${randomInt(9)}`;
      if (isValidSemVer(v)) versions.add(v);
    }
    const list = [...versions];
    const sql = await sortedInSql(list);
    const keys = await keysOf(list);
    // Equal precedence may sit in either order; compare the precedence sequence, and that keys tie exactly there.
    for (let i = 1; i < sql.length; i++) {
      const order = compareSemVer(sql[i - 1]!, sql[i]!);
      expect(order, `${sql[i - 1]} before ${sql[i]}`).toBeLessThanOrEqual(0);
      expect(keys.get(sql[i - 1]!) === keys.get(sql[i]!), `${sql[i - 1]} vs ${sql[i]}`).toBe(order === 0);
    }
  });
});

describe('releases by precedence', () => {
  it('promotes the highest release when no version is given, and finds 1.10 among equivalents', async () => {
    const project = await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: 'Versions' });
    expect(project.status).toBe(200);
    const projectId = project.body.projectId as string;
    for (const version of ['1.9.0', '1.10.0-rc.2', '1.10.0-rc.10', '1.2.3', '1.10.0+build.7', '1.10.0-rc.1']) {
      const created = await t.admin.post('/api/release', { projectId, version });
      expect(created.status, created.text).toBe(200);
    }
    expect((await t.deps.store.releases.highest(projectId))?.version).toBe('1.10.0+build.7');
    const equivalents = await t.deps.store.releases.equivalents(projectId, '1.10.0');
    expect(equivalents.map((r) => r.version)).toEqual(['1.10.0+build.7']);
    const read = await t.admin.get('/api/release/details', { projectId, version: '1.10' });
    expect(read.status, read.text).toBe(200);
    expect(read.body.version).toBe('1.10.0+build.7');

    const promoted = await t.admin.post('/api/release/promote', { projectId, environments: ['Staging'] });
    expect(promoted.status, promoted.text).toBe(200);
    const deployment = await t.db('deployments').where({ id: promoted.body.deploymentId }).first();
    const release = await t.db('releases').where({ id: deployment.release_id }).first();
    expect(release.version).toBe('1.10.0+build.7');
  });

  it('answers a project without releases as before', async () => {
    const project = await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: 'No versions' });
    expect(await t.deps.store.releases.highest(project.body.projectId)).toBeNull();
    const promoted = await t.admin.post('/api/release/promote', {
      projectId: project.body.projectId,
      environments: ['Staging'],
    });
    expect(promoted.status).toBe(400);
    expect(promoted.text).toContain('no release');
  });
});
