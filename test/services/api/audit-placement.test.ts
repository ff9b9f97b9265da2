/**
 * Where an audit event is placed (domain/audit.ts recordChange, store/audit-events.ts insert): the
 * workspace the change names, else the workspace of a resource it names (projectId, releaseId, …,
 * found inside the INSERT), else the account's own. An organization-wide account has no workspace
 * of its own, so a change that names only a project must still land in the project's workspace,
 * where the workspace's accounts read it (GET /api/audit), and not among the organization's events.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type Client, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let workspaceId: string;
let projectId: string;
let orgAdmin: Client & { credentials: { id: string; key: string } };

async function ok<T = any>(response: Promise<{ status: number; body: T; text: string }>): Promise<T> {
  const r = await response;
  expect(r.status, r.text).toBe(200);
  return r.body;
}

const eventsOf = (where: Record<string, unknown>) => t.db('audit_events').where(where).select('*');

beforeAll(async () => {
  t = await testApp();
  // Not the bootstrap workspace: an event that fell back to "Main" or to no workspace is told apart.
  workspaceId = await t.workspace('Placement');
  ({ projectId } = await ok(t.admin.post('/api/project', { workspaceId, name: 'Placed' })));
  orgAdmin = await t.account([{ role: 'Admin' }], null);
  const me = await ok(orgAdmin.get('/api/me'));
  expect(me.workspaceId).toBeNull();
});

describe('audit event placement', () => {
  it('places a release created by an organization-wide account in its project workspace', async () => {
    for (const [client, version] of [
      [t.admin, '1.0.0'],
      [orgAdmin, '1.0.1'],
    ] as const) {
      const created = await client.post('/api/release', { projectId, version });
      expect(created.status, created.text).toBe(200);
      const requestId = created.headers['x-request-id'];
      const events = await eventsOf({
        resource_type: 'release',
        action: 'create',
        resource_id: created.body.releaseId,
      });
      expect(events, `event of release ${version}`).toHaveLength(1);
      const [event] = events;
      expect(event.workspace_id).toBe(workspaceId);
      expect(event.status).toBe(200);
      if (typeof requestId === 'string') expect(event.request_id).toBe(requestId);
    }
  });

  it('shows that event to the workspace accounts and not among the organization events', async () => {
    const { releaseId } = await ok(orgAdmin.post('/api/release', { projectId, version: '2.0.0' }));
    const viewer = await t.account([{ role: 'View' }], workspaceId);
    const inWorkspace = await ok(viewer.get('/api/audit', { workspaceId, resourceType: 'release', take: 500 }));
    expect(inWorkspace.events.map((e: { resourceId: string }) => e.resourceId)).toContain(releaseId);
    const organization = await ok(t.admin.get('/api/audit', { resourceType: 'release', take: 500 }));
    expect(organization.events.map((e: { resourceId: string }) => e.resourceId)).not.toContain(releaseId);
    // Nor in another workspace.
    const main = await ok(t.admin.get('/api/audit', { workspaceId: t.mainWorkspaceId, resourceType: 'release' }));
    expect(main.events.map((e: { resourceId: string }) => e.resourceId)).not.toContain(releaseId);
  });

  it('places the creation of a project step (its body names the project) in the project workspace', async () => {
    const { stepTemplateId } = await ok(
      orgAdmin.post('/api/step-template', {
        workspaceId,
        name: 'Placed template',
        script: 'true',
        scriptLanguage: 'bash',
        propertiesRaw: '[]',
      }),
    );
    const { projectStepId } = await ok(orgAdmin.post('/api/project/step', { projectId, name: 'S', stepTemplateId }));
    const events = await eventsOf({ resource_type: 'project/step', resource_id: projectStepId });
    expect(events.map((e) => e.action)).toEqual(['create']);
    expect(events[0].workspace_id).toBe(workspaceId);
    const templateEvents = await eventsOf({ resource_type: 'step-template', resource_id: stepTemplateId });
    expect(templateEvents.map((e) => e.workspace_id)).toEqual([workspaceId]);
  });

  it('places updates that name only a part of a project (a step, a channel) in the project workspace', async () => {
    const { stepTemplateId } = await ok(
      orgAdmin.post('/api/step-template', {
        workspaceId,
        name: 'Parts template',
        script: 'true',
        scriptLanguage: 'bash',
        propertiesRaw: '[]',
      }),
    );
    const { projectStepId } = await ok(orgAdmin.post('/api/project/step', { projectId, name: 'Part', stepTemplateId }));
    await ok(orgAdmin.put('/api/project/step', { projectStepId, name: 'Part renamed' }));
    const updates = await eventsOf({ resource_type: 'project/step', action: 'update', resource_id: projectStepId });
    expect(updates.map((e) => e.workspace_id)).toEqual([workspaceId]);
    const { channelId } = await ok(orgAdmin.post('/api/project/channel', { projectId, name: 'Placed channel' }));
    await ok(orgAdmin.put('/api/project/channel', { channelId, description: 'moved' }));
    const channelUpdates = await eventsOf({
      resource_type: 'project/channel',
      action: 'update',
      resource_id: channelId,
    });
    expect(channelUpdates.map((e) => e.workspace_id)).toEqual([workspaceId]);
  });

  it('keeps an organization change (no workspace named nor found) outside any workspace', async () => {
    const { serviceAccountId } = await ok(
      orgAdmin.post('/api/service-account', { workspaceId: null, name: 'org-wide-placed', roles: [{ role: 'Admin' }] }),
    );
    const [event] = await eventsOf({
      resource_type: 'service-account',
      action: 'create',
      resource_id: serviceAccountId,
    });
    expect(event).toBeDefined();
    expect(event.workspace_id).toBeNull();
    expect(event.organization_id).not.toBeNull();
  });

  it('stores no event of a refused release (unknown project)', async () => {
    const before = await t.db('audit_events').count({ n: '*' }).first();
    const refused = await orgAdmin.post('/api/release', {
      projectId: '00000000-0000-4000-8000-000000000000',
      version: '1.0.0',
    });
    expect(refused.status).toBe(400);
    const after = await t.db('audit_events').count({ n: '*' }).first();
    expect(Number(after!.n)).toBe(Number(before!.n));
  });
});
