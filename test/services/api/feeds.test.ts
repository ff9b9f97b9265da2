import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
beforeAll(async () => {
  t = await testApp();
});

async function builtinOf(workspaceId: string) {
  const list = await t.admin.get('/api/feed', { workspaceId });
  return list.body.feeds.find((f: { isBuiltin: boolean }) => f.isBuiltin);
}

describe('the built-in feed', () => {
  it('is listed once for every workspace, including ones created later', async () => {
    const other = await t.workspace();
    for (const workspaceId of [t.mainWorkspaceId, other]) {
      const first = await t.admin.get('/api/feed', { workspaceId });
      const second = await t.admin.get('/api/feed', { workspaceId });
      expect(first.status).toBe(200);
      expect(first.body.feeds).toEqual([
        {
          feedId: expect.any(String),
          workspaceId,
          name: 'Built-in',
          feedType: 'BuiltIn',
          url: null,
          isBuiltin: true,
          hasPassword: false,
        },
      ]);
      expect(second.body).toEqual(first.body);
      expect(await t.db('feeds').where({ workspace_id: workspaceId, is_builtin: true })).toHaveLength(1);
    }
  });

  it('is created once when many requests race for it', async () => {
    const fresh = await t.workspace();
    const responses = await Promise.all(
      Array.from({ length: 5 }, () => t.admin.get('/api/feed', { workspaceId: fresh })),
    );
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(await t.db('feeds').where({ workspace_id: fresh })).toHaveLength(1);
  });

  it('cannot be deleted, renamed or changed, and keeps its name from other feeds', async () => {
    const builtin = await builtinOf(t.mainWorkspaceId);
    const deleted = await t.admin.delete('/api/feed', { feedId: builtin.feedId });
    expect(deleted.status).toBe(400);
    expect(deleted.body.error).toContain('built-in');
    expect((await t.admin.put('/api/feed', { feedId: builtin.feedId, name: 'Renamed' })).status).toBe(400);
    expect((await t.admin.put('/api/feed', { feedId: builtin.feedId, url: 'https://example.com' })).status).toBe(400);
    expect((await t.admin.put('/api/feed', { feedId: builtin.feedId, name: 'Built-in' })).status).toBe(200);
    expect(await t.db('feeds').where({ id: builtin.feedId })).toMatchObject([
      { name: 'Built-in', url: null, is_builtin: true },
    ]);

    const fresh = await t.workspace();
    const taken = await t.admin.post('/api/feed', {
      workspaceId: fresh,
      name: 'built-in',
      feedType: 'NuGet',
      url: 'https://example.com',
    });
    expect(taken.status).toBe(400);
    expect(taken.body.validationErrors[0].property).toBe('name');
  });
});

describe('external feeds', () => {
  it('creates a feed with encrypted credentials that are never returned', async () => {
    const created = await t.admin.post('/api/feed', {
      workspaceId: t.mainWorkspaceId,
      name: 'NuGet.org',
      feedType: 'NuGet',
      url: 'https://api.nuget.org/v3/index.json',
      username: 'deployer',
      password: 'hunter2-feed-password',
    });
    expect(created.status).toBe(200);
    const list = await t.admin.get('/api/feed', { workspaceId: t.mainWorkspaceId });
    expect(list.body.feeds.map((f: { name: string }) => f.name)).toEqual(['Built-in', 'NuGet.org']);
    expect(list.body.totalCount).toBe(2);
    expect(list.body.feeds[1]).toEqual({
      feedId: created.body.feedId,
      workspaceId: t.mainWorkspaceId,
      name: 'NuGet.org',
      feedType: 'NuGet',
      url: 'https://api.nuget.org/v3/index.json',
      isBuiltin: false,
      hasPassword: true,
    });
    expect(list.text).not.toContain('hunter2');
    const [row] = await t.db('feeds').where({ id: created.body.feedId });
    expect(JSON.stringify(row)).not.toContain('hunter2');
    expect(JSON.stringify(row)).not.toContain('deployer');
    expect(JSON.parse(t.deps.secrets.decrypt(row.config_encrypted))).toEqual({
      username: 'deployer',
      password: 'hunter2-feed-password',
    });
  });

  it('updates only the fields sent and clears a credential with null', async () => {
    const created = await t.admin.post('/api/feed', {
      workspaceId: t.mainWorkspaceId,
      name: 'Maven',
      feedType: 'Maven',
      url: 'https://repo.example.com',
      username: 'u',
      password: 'p',
    });
    const feedId = created.body.feedId;
    expect((await t.admin.put('/api/feed', { feedId, url: 'https://repo2.example.com' })).status).toBe(200);
    let details = (await t.admin.get('/api/feed/details', { feedId })).body;
    expect(details).toMatchObject({
      name: 'Maven',
      feedType: 'Maven',
      url: 'https://repo2.example.com',
      hasPassword: true,
    });

    expect((await t.admin.put('/api/feed', { feedId, password: null })).status).toBe(200);
    details = (await t.admin.get('/api/feed/details', { feedId })).body;
    expect(details.hasPassword).toBe(false);
    const [row] = await t.db('feeds').where({ id: feedId });
    expect(JSON.parse(t.deps.secrets.decrypt(row.config_encrypted))).toEqual({ username: 'u', password: null });

    expect(
      (await t.admin.put('/api/feed', { feedId, username: null, name: 'Maven Central', feedType: 'Http' })).status,
    ).toBe(200);
    expect((await t.db('feeds').where({ id: feedId }))[0]).toMatchObject({
      config_encrypted: null,
      name: 'Maven Central',
      feed_type: 'Http',
    });
  });

  it('deletes an external feed', async () => {
    const created = await t.admin.post('/api/feed', {
      workspaceId: t.mainWorkspaceId,
      name: 'Temp feed',
      feedType: 'Http',
      url: 'http://files.example.com',
    });
    expect((await t.admin.delete('/api/feed', { feedId: created.body.feedId })).status).toBe(200);
    expect(await t.db('feeds').where({ id: created.body.feedId })).toHaveLength(0);
    expect((await t.admin.delete('/api/feed', { feedId: created.body.feedId })).status).toBe(400);
  });

  it('refuses bad input with 400', async () => {
    const base = { workspaceId: t.mainWorkspaceId, name: 'Bad', feedType: 'NuGet', url: 'https://example.com' };
    for (const [body, property] of [
      [{ ...base, url: 'not a url' }, 'url'],
      [{ ...base, url: 'file:///etc/passwd' }, 'url'],
      [{ ...base, feedType: 'BuiltIn' }, 'feedType'],
      [{ ...base, feedType: 'Npm' }, 'feedType'],
      [{ ...base, name: 7 }, 'name'],
      [{ ...base, workspaceId: 'nope' }, 'workspaceId'],
      [{ ...base, password: 'x'.repeat(10_001) }, 'password'],
    ] as const) {
      const response = await t.admin.post('/api/feed', body);
      expect(response.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(response.body.validationErrors?.[0]?.property ?? response.body.error).toContain(property);
    }
    expect(await t.db('feeds').where({ name: 'Bad' })).toHaveLength(0);
    expect((await t.admin.put('/api/feed', { feedId: 'nope', name: 'x' })).status).toBe(400);
    expect((await t.admin.get('/api/feed/details', { feedId: 'nope' })).status).toBe(400);
  });

  it('refuses a duplicate name', async () => {
    await t.admin.post('/api/feed', {
      workspaceId: t.mainWorkspaceId,
      name: 'Dup feed',
      feedType: 'Http',
      url: 'https://a.example.com',
    });
    const duplicate = await t.admin.post('/api/feed', {
      workspaceId: t.mainWorkspaceId,
      name: 'DUP FEED',
      feedType: 'Http',
      url: 'https://b.example.com',
    });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body.validationErrors[0].property).toBe('name');
  });
});

describe('feed permissions', () => {
  it('lets a View account read but not change feeds', async () => {
    const viewer = await t.account([{ role: 'View' }]);
    expect((await viewer.get('/api/feed', { workspaceId: t.mainWorkspaceId })).status).toBe(200);
    const refused = await viewer.post('/api/feed', {
      workspaceId: t.mainWorkspaceId,
      name: 'Nope',
      feedType: 'Http',
      url: 'https://example.com',
    });
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('ManageWorkspace') });
    expect(await t.db('feeds').where({ name: 'Nope' })).toHaveLength(0);
  });

  it('treats another workspace as unknown', async () => {
    const created = await t.admin.post('/api/feed', {
      workspaceId: t.mainWorkspaceId,
      name: 'Private',
      feedType: 'Http',
      url: 'https://example.com',
    });
    const other = await t.workspace();
    const outsider = await t.account([{ role: 'ManageWorkspace' }, { role: 'View' }], other);
    expect((await outsider.get('/api/feed', { workspaceId: t.mainWorkspaceId })).status).toBe(400);
    expect((await outsider.get('/api/feed/details', { feedId: created.body.feedId })).status).toBe(400);
    expect((await outsider.delete('/api/feed', { feedId: created.body.feedId })).status).toBe(400);
    expect(await t.db('feeds').where({ id: created.body.feedId })).toHaveLength(1);
  });
});
