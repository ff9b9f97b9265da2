/**
 * The dashboard's deployment page for a deployment awaiting approval (issue #15), in a real
 * Chromium against a real control plane and agent: the waiting reason (updated as approvals come
 * in, without reloading), the Approve/Reject buttons with their comment, the reasons they are
 * refused (no role, own request, already decided), and a rejection cancelling the deployment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { waitFor } from '../helpers/wait-for.ts';
import {
  ADMIN,
  api,
  bashProject,
  cleanup,
  startControlPlane,
  startMachines,
  workspaceOf,
  type Api,
  type ControlPlane,
} from '../e2e/harness.ts';
import { ensureDashboardBuilt, launchBrowser, signIn } from './browser.ts';

let plane: ControlPlane;
let admin: Api;
let browser: Browser;
let workspaceId: string;
let lifecycleId: string;
const accounts: Record<string, { id: string; key: string }> = {};

beforeAll(async () => {
  const [, started] = await Promise.all([ensureDashboardBuilt(), startControlPlane()]);
  plane = started;
  admin = api(plane.url);
  const workspace = await workspaceOf(admin);
  workspaceId = workspace.workspaceId;
  lifecycleId = workspace.defaultLifecycleId;
  await startMachines(plane, admin, workspaceId, [
    { name: 'gov-web-1', environmentIds: Object.values(workspace.environments) },
  ]);
  const staging = await admin.put('/api/environment', {
    environmentId: workspace.environments.Staging,
    requiredApprovals: 2,
  });
  expect(staging.status, staging.text).toBe(200);
  for (const [name, roles] of [
    ['approver-1', ['View', 'ApproveDeployments']],
    ['approver-2', ['View', 'ApproveDeployments']],
    ['viewer', ['View']],
  ] as const) {
    const created = await admin.post('/api/service-account', {
      workspaceId,
      name,
      roles: roles.map((role) => ({ role })),
    });
    const key = await admin.post('/api/service-account/api-key', { serviceAccountId: created.body.serviceAccountId });
    accounts[name] = { id: created.body.serviceAccountId, key: key.body.apiKey };
  }
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await cleanup();
});

async function deploymentPage(credentials: { id: string; key: string }, deploymentId: string): Promise<Page> {
  const page = await signIn(await browser.newContext(), plane.url, credentials);
  await page.goto(`${plane.url}/deployments/${deploymentId}`);
  await page.getByLabel('Deployment status').waitFor();
  return page;
}

async function textOf(page: Page, label: string, expected: string | RegExp): Promise<string> {
  return waitFor(
    async () => {
      const text =
        (await page
          .getByLabel(label)
          .first()
          .textContent()
          .catch(() => null)) ?? '';
      return (typeof expected === 'string' ? text.includes(expected) : expected.test(text)) ? text : null;
    },
    { timeoutMs: 30_000, intervalMs: 100, description: `'${label}' to show ${String(expected)}` },
  );
}

describe('approving on the deployment page', () => {
  it('shows why it waits, lets approvers approve or reject with a comment, and says why others cannot', async () => {
    const { projectId } = await bashProject(admin, workspaceId, lifecycleId, [{ name: 'Say', script: 'echo hi' }]);
    const release = await admin.post('/api/release', { projectId, version: '1.0.0' });
    const deployed = await admin.post('/api/release/deploy', {
      releaseId: release.body.releaseId,
      environments: ['Staging'],
    });
    expect(deployed.status, deployed.text).toBe(200);
    const deploymentId = deployed.body.deploymentIds[0] as string;

    const first = await deploymentPage(accounts['approver-1']!, deploymentId);
    expect(await textOf(first, 'Waiting reason', 'Waiting: awaiting approval (0 of 2)')).toBeTruthy();
    expect(await first.getByLabel('Deployment status').textContent()).toBe('Queued');
    // The project page's cell says it too (not "waiting for a control plane"), and the topology
    // says what the environment requires.
    const elsewhere = await signIn(await browser.newContext(), plane.url, accounts.viewer!);
    await elsewhere.goto(`${plane.url}/projects/${projectId}`);
    await elsewhere.locator('.wait', { hasText: 'Waiting: awaiting approval (0 of 2)' }).waitFor();
    await elsewhere.goto(`${plane.url}/workspaces/${workspaceId}/topology`);
    expect(await textOf(elsewhere, 'Environments', 'Staging (2 approvals required)')).toBeTruthy();
    const panel = first.getByRole('region', { name: 'Approval' });
    expect(await panel.getByRole('heading').textContent()).toBe('Approval: 0 of 2');
    // A rejection must say why: Reject waits for a comment.
    expect(await panel.getByRole('button', { name: 'Reject' }).isDisabled()).toBe(true);
    await panel.getByLabel('Comment').fill('release notes checked');
    await panel.getByRole('button', { name: 'Approve' }).click();
    await textOf(first, 'Approval', 'Approval: 1 of 2');
    expect(await textOf(first, 'Approval', 'Approved by approver-1')).toMatch(
      /You have already approved or rejected it/,
    );
    // The engine's new reason arrives as a log line over SSE, and the page reads itself again.
    await textOf(first, 'Waiting reason', 'Waiting: awaiting approval (1 of 2)');

    const viewer = await deploymentPage(accounts.viewer!, deploymentId);
    expect(
      await textOf(viewer, 'Approval', 'Approve: Your account lacks the ApproveDeployments role here'),
    ).toBeTruthy();
    expect(await viewer.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    const requester = await deploymentPage(ADMIN, deploymentId);
    await textOf(requester, 'Approval', 'You requested this deployment: another account must approve it');

    const second = await deploymentPage(accounts['approver-2']!, deploymentId);
    const secondPanel = second.getByRole('region', { name: 'Approval' });
    await secondPanel.getByLabel('Comment').fill('not during the demo');
    await secondPanel.getByRole('button', { name: 'Reject' }).click();
    await waitFor(async () => (await second.getByLabel('Deployment status').textContent()) === 'Cancelled', {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: 'the rejected deployment to be cancelled',
    });
    await waitFor(
      async () =>
        ((await second.getByRole('log', { name: 'Log lines' }).textContent()) ?? '').includes(
          'Rejected by approver-2: not during the demo',
        ),
      { timeoutMs: 30_000, intervalMs: 100, description: 'the rejection in the log' },
    );
    const read = await admin.get('/api/deployment', { deploymentId, skipLogs: 'True' });
    expect(read.body.status.Status).toBe('Cancelled');
  });
});
