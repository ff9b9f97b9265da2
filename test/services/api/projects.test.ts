/** GET /api/project: one workspace's projects, or without workspaceId those of every workspace the account sees. */
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { Capability } from '../../../services/core/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let otherWorkspaceId: string;
const mainName = `Main project ${randomBytes(3).toString('hex')}`;
const otherName = `Other project ${randomBytes(3).toString('hex')}`;

beforeAll(async () => {
  t = await testApp();
  otherWorkspaceId = await t.workspace();
  for (const [workspaceId, name] of [
    [t.mainWorkspaceId, mainName],
    [otherWorkspaceId, otherName],
  ] as const) {
    const created = await t.admin.post('/api/project', { workspaceId, name });
    expect(created.status, created.text).toBe(200);
  }
});

const names = (body: { projects: Array<{ name: string }> }) => body.projects.map((p) => p.name);

describe('GET /api/project', () => {
  it('lists one workspace when workspaceId is given', async () => {
    const listed = await t.admin.get('/api/project', { workspaceId: otherWorkspaceId });
    expect(listed.status, listed.text).toBe(200);
    expect(names(listed.body)).toEqual([otherName]);
    expect(listed.body.totalCount).toBe(1);
  });

  it('lists the projects of every workspace an organization-wide account sees when workspaceId is absent', async () => {
    const listed = await t.admin.get('/api/project');
    expect(listed.status, listed.text).toBe(200);
    expect(names(listed.body)).toEqual(expect.arrayContaining([mainName, otherName]));
    const other = listed.body.projects.find((p: { name: string }) => p.name === otherName);
    expect(other.workspaceId).toBe(otherWorkspaceId);
  });

  it('lists only its own workspace for a workspace-scoped account when workspaceId is absent', async () => {
    const scoped = await t.account([{ role: Capability.View }], otherWorkspaceId);
    const listed = await scoped.get('/api/project');
    expect(listed.status, listed.text).toBe(200);
    expect(names(listed.body)).toEqual([otherName]);
    expect(listed.body.totalCount).toBe(1);
  });

  it('still refuses a workspace the account cannot see', async () => {
    const scoped = await t.account([{ role: Capability.View }], otherWorkspaceId);
    const listed = await scoped.get('/api/project', { workspaceId: t.mainWorkspaceId });
    expect(listed.status).toBe(400);
    expect(listed.body.error).toBe('Invalid workspaceId: not found');
  });
});
