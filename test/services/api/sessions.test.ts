/**
 * Dashboard sessions (issue #11): sign-in sets an HttpOnly SameSite=Strict cookie for a token
 * stored only as a hash; the cookie authenticates like Basic; sessions expire, end at sign-out
 * and with their API key; state-changing cookie requests need the CSRF token and a same origin;
 * Basic works exactly as before, cookie or not.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../../services/core/index.ts';
import { SESSION_TTL_MS } from '../../../services/domain/index.ts';
import { ADMIN, testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let now = new Date('2026-11-23T12:00:00Z');
const clock = { now: () => now };

beforeAll(async () => {
  t = await testApp({ clock });
});

async function signIn(credentials: { id: string; key: string }, headers: Record<string, string> = {}) {
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/session',
    headers: { 'content-type': 'application/json', ...headers },
    payload: JSON.stringify({ serviceAccountId: credentials.id, apiKey: credentials.key }),
  });
  const setCookie = String(response.headers['set-cookie'] ?? '');
  const token = /gantry_session=([^;]*)/.exec(setCookie)?.[1] ?? '';
  return { response, setCookie, token, body: response.json() };
}

const withCookie = (token: string, extra: Record<string, string> = {}) => ({
  cookie: `gantry_session=${token}`,
  ...extra,
});

describe('POST /api/session', () => {
  it('sets an HttpOnly SameSite=Strict cookie whose token is stored only as a hash', async () => {
    const { response, setCookie, token, body } = await signIn(ADMIN);
    expect(response.statusCode).toBe(200);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\//);
    expect(setCookie).toMatch(new RegExp(`Max-Age=${SESSION_TTL_MS / 1000}`));
    expect(token.length).toBeGreaterThan(30);
    expect(body).toMatchObject({ serviceAccountId: ADMIN.id, name: 'Admin', csrfToken: expect.any(String) });
    expect(response.body).not.toContain(token);
    expect(response.body).not.toContain(ADMIN.key);
    const rows = await t.db('dashboard_sessions').select('token_hash');
    expect(rows.map((r) => r.token_hash)).toContain(hashSecret(token));
    expect(JSON.stringify(rows)).not.toContain(token);
  });

  it('refuses a wrong key with 401/2002 and sets no cookie', async () => {
    const { response, setCookie } = await signIn({ id: ADMIN.id, key: 'wrong' });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toMatchObject({ errorcode: 2002, requestid: null });
    expect(setCookie).toBe('');
  });

  it('refuses a sign-in posted from another site (login CSRF)', async () => {
    const { response, setCookie } = await signIn(ADMIN, { origin: 'https://evil.example', host: 'localhost:80' });
    expect(response.statusCode).toBe(401);
    expect(response.json().errorcode).toBe(2001);
    expect(setCookie).toBe('');
  });
});

describe('session cookie', () => {
  it('authenticates reads like Basic, with the same roles', async () => {
    const viewer = await t.account([{ role: 'View' }]);
    const { token } = await signIn(viewer.credentials);
    const me = await t.app.inject({ method: 'GET', url: '/api/session', headers: withCookie(token) });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toMatchObject({ serviceAccountId: viewer.credentials.id, roles: [{ role: 'View' }] });
    const refused = await t.app.inject({
      method: 'POST',
      url: '/api/project',
      headers: withCookie(token, { 'content-type': 'application/json', 'x-csrf-token': me.json().csrfToken }),
      payload: JSON.stringify({ workspaceId: t.mainWorkspaceId, name: 'Not mine' }),
    });
    expect(refused.statusCode).toBe(401);
    expect(refused.json().errorcode).toBe(2003);
  });

  it('refuses a state-changing request without the CSRF token, with a wrong one, or from another origin', async () => {
    const { token, body } = await signIn(ADMIN);
    const post = (headers: Record<string, string>, name: string) =>
      t.app.inject({
        method: 'POST',
        url: '/api/project',
        headers: withCookie(token, { 'content-type': 'application/json', ...headers }),
        payload: JSON.stringify({ workspaceId: t.mainWorkspaceId, name }),
      });
    const missing = await post({}, 'csrf-missing');
    const wrong = await post({ 'x-csrf-token': 'f'.repeat(64) }, 'csrf-wrong');
    const foreign = await post({ 'x-csrf-token': body.csrfToken, origin: 'https://evil.example' }, 'csrf-origin');
    const crossSite = await post({ 'x-csrf-token': body.csrfToken, 'sec-fetch-site': 'cross-site' }, 'csrf-site');
    for (const refused of [missing, wrong, foreign, crossSite]) {
      expect(refused.statusCode).toBe(401);
      expect(refused.json().errorcode).toBe(2001);
    }
    const accepted = await post(
      { 'x-csrf-token': body.csrfToken, origin: 'http://localhost:80', host: 'localhost:80' },
      'csrf-ok',
    );
    expect(accepted.statusCode, accepted.body).toBe(200);
    const names = (await t.db('projects').whereLike('name', 'csrf-%').select('name')).map((r) => r.name);
    expect(names).toEqual(['csrf-ok']);
  });

  it('ends at sign-out: the cookie is cleared and the token refused from then on', async () => {
    const { token, body } = await signIn(ADMIN);
    const out = await t.app.inject({
      method: 'DELETE',
      url: '/api/session',
      headers: withCookie(token, { 'x-csrf-token': body.csrfToken }),
    });
    expect(out.statusCode).toBe(200);
    expect(String(out.headers['set-cookie'])).toMatch(/gantry_session=;.*Max-Age=0/);
    const after = await t.app.inject({ method: 'GET', url: '/api/session', headers: withCookie(token) });
    expect(after.statusCode).toBe(401);
    expect(after.json().errorcode).toBe(2002);
    const row = await t
      .db('dashboard_sessions')
      .where({ token_hash: hashSecret(token) })
      .first();
    expect(row.revoked_at).not.toBeNull();
  });

  it('expires after its lifetime', async () => {
    const { token } = await signIn(ADMIN);
    now = new Date(now.getTime() + SESSION_TTL_MS - 1000);
    expect((await t.app.inject({ method: 'GET', url: '/api/me', headers: withCookie(token) })).statusCode).toBe(200);
    now = new Date(now.getTime() + 2000);
    const expired = await t.app.inject({ method: 'GET', url: '/api/me', headers: withCookie(token) });
    expect(expired.statusCode).toBe(401);
    expect(expired.json().errorcode).toBe(2002);
  });

  it('forgets sessions that ended more than a day ago at the next sign-in', async () => {
    const { token } = await signIn(ADMIN);
    now = new Date(now.getTime() + SESSION_TTL_MS + 25 * 60 * 60 * 1000);
    await signIn(ADMIN);
    expect(
      await t
        .db('dashboard_sessions')
        .where({ token_hash: hashSecret(token) })
        .first(),
    ).toBeUndefined();
  });

  it('ends with the API key it was opened with', async () => {
    const account = await t.account([{ role: 'View' }]);
    const { token } = await signIn(account.credentials);
    const keys = await t.admin.get('/api/service-account/api-key', { serviceAccountId: account.credentials.id });
    await t.admin.delete('/api/service-account/api-key', { apiKeyId: keys.body.apiKeys[0].apiKeyId });
    const after = await t.app.inject({ method: 'GET', url: '/api/me', headers: withCookie(token) });
    expect(after.statusCode).toBe(401);
  });

  it('leaves Basic authentication as it was: a header wins over any cookie', async () => {
    const viewer = await t.account([{ role: 'View' }]);
    const { token } = await signIn(viewer.credentials);
    const basic = `Basic ${Buffer.from(`${ADMIN.id}:${ADMIN.key}`).toString('base64')}`;
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/project',
      headers: withCookie(token, { authorization: basic, 'content-type': 'application/json' }),
      payload: JSON.stringify({ workspaceId: t.mainWorkspaceId, name: 'Basic wins' }),
    });
    expect(created.statusCode).toBe(200);
    const wrongBasic = await t.app.inject({
      method: 'GET',
      url: '/api/me',
      headers: withCookie(token, { authorization: 'Basic Zm9vOmJhcg==' }),
    });
    expect(wrongBasic.statusCode).toBe(401);
    expect(wrongBasic.json()).toMatchObject({ errorcode: 2002, requestid: null });
  });
});
