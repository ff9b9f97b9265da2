/**
 * The dashboard in a real Chromium against a real control plane (PostgreSQL + NATS JetStream) and
 * a real agent running bash: sign in, the overview matrix, create a release, deploy it and watch a
 * line the script prints arrive over SSE, cancel, a promotion the lifecycle blocks, a View-only
 * account, workspace isolation, HTML that stays text, sign-out. Elements are found by role and
 * label, as a person finds them. Screenshots of every page: docs/screenshots/ with
 * GANTRY_UPDATE_SCREENSHOTS=1, else a temporary folder.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import pg from 'pg';
import { waitFor } from '../helpers/wait-for.ts';
import {
  api,
  bashProject,
  cleanup,
  startControlPlane,
  startMachines,
  workspaceOf,
  type Api,
  type ControlPlane,
} from '../e2e/harness.ts';
import { E2E_MODES } from '../e2e/modes.ts';
import { ensureDashboardBuilt, launchBrowser, signIn as signInAt } from './browser.ts';

const SHOTS = process.env.GANTRY_UPDATE_SCREENSHOTS
  ? fileURLToPath(new URL('../../docs/screenshots/', import.meta.url))
  : fs.mkdtempSync(path.join(os.tmpdir(), 'gantry-shots-'));

const HOSTILE_NAME = 'Web <script>window.__pwned = 1</script> shop';
const HOSTILE_LINE = '<script>window.__pwned = 2</script><img src=x onerror="window.__pwned = 3">';

let plane: ControlPlane;
let admin: Api;
let browser: Browser;
let workspaceId: string;
let projectId: string;
let slowProjectId: string;
let viewer: { id: string; key: string };
let databaseUrl: string;
let firstDeploymentId: string;
let otherProjectName: string;

const signIn = (context: BrowserContext, credentials: { id: string; key: string }): Promise<Page> =>
  signInAt(context, plane.url, credentials);

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

/** The text of the log view once it contains `text` (lines arrive over SSE; nothing reloads the page). */
async function logContains(page: Page, text: string, timeoutMs = 30_000): Promise<string> {
  const log = page.getByRole('log', { name: 'Log lines' });
  return waitFor(
    async () => {
      const content = (await log.textContent()) ?? '';
      return content.includes(text) ? content : null;
    },
    { timeoutMs, intervalMs: 100, description: `log view to show '${text}'` },
  );
}

async function statusIs(page: Page, status: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(async () => (await page.getByLabel('Deployment status').textContent()) === status, {
    timeoutMs,
    intervalMs: 100,
    description: `deployment status ${status}`,
  });
}

beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  const [, started] = await Promise.all([
    ensureDashboardBuilt(),
    (async () => {
      const options = await E2E_MODES[1]!.options();
      databaseUrl = options.databaseUrl!;
      return startControlPlane(options);
    })(),
  ]);
  plane = started;
  admin = api(plane.url);
  const workspace = await workspaceOf(admin);
  workspaceId = workspace.workspaceId;
  await startMachines(plane, admin, workspaceId, [
    { name: 'web-1', environmentIds: Object.values(workspace.environments) },
  ]);
  const project = await bashProject(admin, workspaceId, workspace.defaultLifecycleId, [
    {
      name: 'Deploy',
      script: `echo "hello from the script on $(hostname)"\necho '${HOSTILE_LINE}'\nprintf '\\033[32mgreen text\\033[0m\\n'`,
    },
  ]);
  projectId = project.projectId;
  expect((await admin.put('/api/project', { projectId, name: HOSTILE_NAME })).status).toBe(200);
  for (const [name, variableType, value] of [
    ['Greeting', 'Text', 'hello'],
    ['ApiToken', 'Sensitive', 'never-shown-s3cret'],
  ] as const) {
    const variable = await admin.post('/api/project/variable', { projectId, name, variableType });
    expect(
      (await admin.post('/api/project/variable/value', { variableId: variable.body.variableId, theValue: value }))
        .status,
    ).toBe(200);
  }
  slowProjectId = (
    await bashProject(admin, workspaceId, workspace.defaultLifecycleId, [
      { name: 'Slow', script: 'echo "slow step started"\nsleep 120\necho "never printed"' },
    ])
  ).projectId;
  // A second workspace with a project the workspace-scoped viewer must never see.
  const other = (await admin.post('/api/workspace', { name: 'Elsewhere' })).body.workspaceId as string;
  otherProjectName = `Hidden ${Date.now()}`;
  expect((await admin.post('/api/project', { workspaceId: other, name: otherProjectName })).status).toBe(200);
  const account = await admin.post('/api/service-account', { workspaceId, name: 'Viewer', roles: [{ role: 'View' }] });
  const key = await admin.post('/api/service-account/api-key', { serviceAccountId: account.body.serviceAccountId });
  viewer = { id: account.body.serviceAccountId, key: key.body.apiKey };
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await cleanup();
  if (!process.env.GANTRY_UPDATE_SCREENSHOTS) fs.rmSync(SHOTS, { recursive: true, force: true });
});

describe('dashboard in Chromium', () => {
  let adminPage: Page;

  it('signs in and shows the projects × environments matrix', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    await page.goto(`${plane.url}/`);
    await page.getByRole('heading', { name: 'Sign in to Gantry' }).waitFor();
    await shot(page, 'sign-in');
    await page.close();
    adminPage = await signIn(context, { id: 'e2e-admin', key: 'e2e-admin-key-0123456789abcdef' });
    // The organization-wide Admin sees both workspaces; the switcher takes it to Main.
    await adminPage.getByLabel('Workspace').selectOption({ label: 'Main' });
    const matrix = adminPage.getByRole('table', { name: 'Projects by environment' });
    await matrix.getByRole('columnheader', { name: 'Staging' }).waitFor();
    const headers = await matrix.getByRole('columnheader').allTextContents();
    expect(headers).toEqual(['Project', 'Staging', 'Production']);
    // The project name is text: its <script> is shown, never run.
    await expect(matrix.getByRole('link', { name: HOSTILE_NAME }).textContent()).resolves.toBe(HOSTILE_NAME);
    expect(await adminPage.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    // Live: a deployment made elsewhere (a pipeline) shows up in its cell without a reload.
    const release = await admin.post('/api/release', { projectId, version: '0.9.0' });
    await admin.post('/api/release/deploy', { releaseId: release.body.releaseId, environments: ['Staging'] });
    const row = matrix.getByRole('row').filter({ hasText: HOSTILE_NAME });
    await waitFor(async () => ((await row.textContent()) ?? '').includes('0.9.0'), {
      timeoutMs: 15_000,
      description: 'the overview cell to show 0.9.0 without a reload',
    });
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'gantry_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    expect(await adminPage.evaluate(() => JSON.stringify(localStorage) + document.cookie)).not.toContain(
      'e2e-admin-key',
    );
  }, 60_000);

  it('creates a release, deploys it, and shows the script’s lines live, as text', async () => {
    const page = adminPage;

    await page.getByRole('link', { name: HOSTILE_NAME }).click();
    await page.getByRole('heading', { name: HOSTILE_NAME }).waitFor();
    await page.getByRole('button', { name: 'Create release' }).click();
    const form = page.getByRole('form', { name: 'Create release' });
    await form.getByLabel('Version').fill('1.0.0');
    await form.getByLabel('Notes').fill('First <b>release</b>');
    await form.getByRole('button', { name: 'Create release' }).click();
    const deploy = page.getByRole('button', { name: 'Deploy 1.0.0 to Staging' });
    await deploy.waitFor();
    await deploy.click();
    await page.waitForURL(/\/deployments\//);
    await logContains(page, 'hello from the script');
    // The script's later lines arrive in chunks of their own (the agent sends every 25 ms).
    const log = await logContains(page, HOSTILE_LINE);
    await statusIs(page, 'Completed');
    firstDeploymentId = new URL(page.url()).pathname.split('/').at(-1)!;
    expect(log).toContain('hello from the script');
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    await page.getByRole('log', { name: 'Log lines' }).locator('.ansi-green', { hasText: 'green text' }).waitFor();
    await shot(page, 'deployment');
    // The release's row now shows the deployment in Staging.
    await page.getByRole('link', { name: HOSTILE_NAME }).click();
    const row = page
      .getByRole('table', { name: 'Releases by environment' })
      .getByRole('row')
      .filter({ hasText: '1.0.0' });
    await waitFor(
      async () => {
        const text = (await row.textContent()) ?? '';
        if (!text.includes('Completed')) throw new Error(`the row reads: ${text}`);
        return true;
      },
      {
        timeoutMs: 20_000,
        description: 'release row to show Completed',
      },
    );
  }, 60_000);

  it('disables a promotion the lifecycle blocks and says why', async () => {
    const page = adminPage;
    expect((await admin.post('/api/release', { projectId, version: '2.0.0' })).status).toBe(200);
    await page.reload();
    const blocked = page.getByRole('button', { name: 'Deploy 2.0.0 to Production' });
    await blocked.waitFor();
    expect(await blocked.isDisabled()).toBe(true);
    await page
      .getByText("The release has not reached phase 'Production': phase 'Staging' is not complete")
      .first()
      .waitFor();
    // 1.0.0 completed in Staging: its promotion to Production is offered.
    expect(await page.getByRole('button', { name: 'Promote 1.0.0 to Production' }).isEnabled()).toBe(true);
    await shot(page, 'project');
  }, 60_000);

  it('cancels a running deployment from its page', async () => {
    const page = adminPage;
    await page.goto(`${plane.url}/projects/${slowProjectId}`);
    await page.getByRole('button', { name: 'Create release' }).click();
    await page.getByRole('form', { name: 'Create release' }).getByRole('button', { name: 'Create release' }).click();
    await page.getByRole('button', { name: 'Deploy 1.0.0 to Staging' }).click();
    await page.waitForURL(/\/deployments\//);
    await logContains(page, 'slow step started');
    await statusIs(page, 'Running');
    await page.getByRole('button', { name: 'Cancel deployment' }).click();
    await statusIs(page, 'Cancelled', 30_000);
    const deploymentId = new URL(page.url()).pathname.split('/').at(-1)!;
    const stored = await admin.get('/api/deployment', { deploymentId, skipLogs: 'True' });
    expect(stored.body.status.Status).toBe('Cancelled');
  }, 60_000);

  it('holds the last 100 000 lines of a longer log as a window of rows; permalinks land on their line, before those too; the download has every line', async () => {
    // 150 000 more lines after the deployment's own 10, written straight into the store.
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      await db.query(
        `insert into deployment_logs (id, deployment_id, tick, created_at, level, data)
         select $1 || '-bulk-' || i, $1, d.last_log_tick + i, now(), case when i % 1000 = 0 then 'Error' else 'Information' end,
                'bulk line ' || i
         from deployments d, generate_series(1, 150000) i where d.id = $1`,
        [firstDeploymentId],
      );
      await db.query('update deployments set last_log_tick = last_log_tick + 150000 where id = $1', [
        firstDeploymentId,
      ]);
    } finally {
      await db.end();
    }
    const tickOf = async (data: string) => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        const { rows } = await client.query<{ tick: string }>(
          'select tick from deployment_logs where deployment_id = $1 and data = $2',
          [firstDeploymentId, data],
        );
        return rows[0]!.tick;
      } finally {
        await client.end();
      }
    };
    const page = adminPage;
    await page.goto(`${plane.url}/deployments/${firstDeploymentId}`);
    const counter = page.getByRole('status').filter({ hasText: 'lines' });
    const counted = (pattern: RegExp, description: string, timeoutMs = 60_000) =>
      waitFor(async () => pattern.test((await counter.textContent()) ?? ''), {
        timeoutMs,
        intervalMs: 200,
        description,
      });
    // The page holds the last 100 000 lines and says how many come before them.
    await counted(/^100000 of 100000 lines · 50,010 earlier not shown/, 'the last 100 000 lines over SSE');
    expect(await page.getByRole('note').first().textContent()).toContain('The first 50,010 lines are not shown here');
    const log = page.getByRole('log', { name: 'Log lines' });
    expect(await log.locator('.log-line').count()).toBeLessThan(200);
    // The first line held is the 50 011th of the log. (Scrolled again on each try: a jump to the
    // newest line the view started before the reader scrolled may still be settling.)
    await waitFor(
      async () => {
        await log.evaluate((element) => {
          element.scrollTop = 0;
        });
        return (await log.getByText(/^bulk line 50001$/).count()) === 1;
      },
      { timeoutMs: 15_000, intervalMs: 200, description: 'the first line held at the top' },
    );
    // 60 scroll steps across the log, each awaited to the next painted frame.
    const frameMs = await log.evaluate(async (element) => {
      const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve(null)));
      const start = performance.now();
      for (let i = 1; i <= 60; i++) {
        element.scrollTop = (element.scrollHeight * i) / 61;
        await frame();
      }
      return (performance.now() - start) / 60;
    });
    expect(frameMs).toBeLessThan(100);
    await log.evaluate((element) => {
      element.scrollTop = element.scrollHeight / 2;
    });
    await log
      .getByText(/^bulk line (99|100)\d{3}$/)
      .first()
      .waitFor();
    expect(await log.locator('.log-line').count()).toBeLessThan(200);
    // The level filter covers the whole log, not only the lines held: one Error line per thousand,
    // 150 of them, the first 50 before the lines held.
    await page.getByLabel('Level').selectOption('Error');
    await counted(/^150 of 150 lines · searched the whole log$/, 'the Errors-only filter over the whole log', 15_000);
    await log.evaluate((element) => {
      element.scrollTop = 0;
    });
    await log.getByText(/^bulk line 1000$/).waitFor();
    // Warnings and errors: the server streams those; the lines held then hold every error too.
    await page.getByLabel('Level').selectOption('Warning');
    await counted(/^150 of 150 lines · searched the whole log$/, 'warnings and errors over the whole log', 15_000);
    await page.getByLabel('Level').selectOption('All');
    await counted(/^100000 of 100000 lines · 50,010 earlier not shown/, 'every line again, the tail held', 60_000);
    // The download is the server's: every line of the log, not only those held.
    const href = await page.getByRole('link', { name: 'Download raw log' }).getAttribute('href');
    expect(href).toBe(`/api/deployment/log?deploymentId=${firstDeploymentId}`);
    const download = await page.request.get(`${plane.url}${href}`);
    expect(download.status()).toBe(200);
    const text = await download.text();
    expect(text.split('\n').filter(Boolean)).toHaveLength(150_010);
    expect(text).toMatch(/ Error +bulk line 150000\n$/);
    expect(text).toContain(' Information bulk line 1\n');
    // A permalink: each line links to #L<its tick>; opened fresh, the page scrolls to that line and marks it.
    expect(await log.getByRole('link').first().getAttribute('href')).toMatch(/^#L\d+$/);
    // The linked line ends a page of the stream (1 000 lines a page from line 50 001); the network
    // is slowed so that pages arrive, and render, one at a time. Centred, the line leaves the view
    // at the bottom of what is held: the jump must not be taken for the reader following the tail,
    // or the next page scrolls the line away.
    await page.goto('about:blank');
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: 4_000_000,
      uploadThroughput: -1,
    });
    try {
      await page.goto(`${plane.url}/deployments/${firstDeploymentId}#L${await tickOf('bulk line 70000')}`);
      await log.locator('.log-line.linked').waitFor({ timeout: 60_000 });
      await counted(/^100000 of 100000 lines/, 'every held line, read slowly');
    } finally {
      await cdp.send('Network.emulateNetworkConditions', {
        offline: false,
        latency: 0,
        downloadThroughput: -1,
        uploadThroughput: -1,
      });
      await cdp.detach();
    }
    // Every page in, the linked line is still the one in view.
    const linkedInView = await log.evaluate((element) => {
      const line = element.querySelector('.log-line.linked');
      if (!line) return 'not rendered';
      const box = line.getBoundingClientRect();
      const view = element.getBoundingClientRect();
      return box.top >= view.top && box.bottom <= view.bottom ? line.textContent : 'rendered out of view';
    });
    expect(linkedInView).toMatch(/bulk line 70000$/);
    // A permalink to a line before those held: the page reads the log from that line, up to 100 000 lines.
    await page.goto('about:blank');
    await page.goto(`${plane.url}/deployments/${firstDeploymentId}#L${await tickOf('bulk line 20000')}`);
    await log.locator('.log-line.linked').waitFor({ timeout: 60_000 });
    expect(await log.locator('.log-line.linked').textContent()).toMatch(/bulk line 20000$/);
    await counted(/^100000 of 100000 lines · later lines not shown/, 'a window of 100 000 lines from the linked one');
    // And back to the tail.
    await page.getByRole('button', { name: 'Follow the latest lines' }).click();
    await counted(/^100000 of 100000 lines · 50,010 earlier not shown/, 'the tail again');
    expect(new URL(page.url()).hash).toBe('');
    process.stdout.write(`150k-line log, last 100k held: ${frameMs.toFixed(1)} ms per scroll frame\n`);
  }, 180_000);

  it('shows machines and the read-only topology', async () => {
    const page = adminPage;
    await page.getByRole('link', { name: 'Machines' }).click();
    const machines = page.getByRole('table', { name: 'Machines' });
    await machines.getByRole('rowheader', { name: 'web-1' }).waitFor();
    expect(await machines.getByRole('row').nth(1).textContent()).toContain('Online');
    await page.getByRole('button', { name: 'Add machine' }).click();
    await page.getByLabel('Machine name').fill('web-2');
    await page.getByRole('button', { name: 'Create machine' }).click();
    const commands = page.getByRole('region', { name: 'Registration command' }).locator('pre');
    expect(await commands.first().textContent()).toMatch(
      /^curl -fsSL http:\/\/127\.0\.0\.1:\d+\/api\/agent\/install\.sh \| sudo sh -s -- --server 127\.0\.0\.1:\d+ --token \S+ --ca-fingerprint \S+$/,
    );
    const command = await commands.nth(1).textContent();
    expect(command).toMatch(
      /^GANTRY_SERVER=127\.0\.0\.1:\d+ GANTRY_AGENT_TOKEN=\S+ GANTRY_AGENT_CA_FINGERPRINT=([0-9A-F]{2}:){31}[0-9A-F]{2} node gantry-agent\.mjs$/,
    );
    await shot(page, 'machines');
    await page.getByRole('link', { name: 'Topology' }).click();
    await page.getByLabel('Project').selectOption({ label: HOSTILE_NAME });
    await page.getByRole('table', { name: 'Steps' }).getByText('Deploy').waitFor();
    const variables = page.getByRole('table', { name: 'Variables' });
    await variables.getByText('ApiToken').waitFor();
    const rows = await variables.getByRole('row').allTextContents();
    expect(rows).toContain('ApiTokenSensitive********unscoped');
    expect(rows).toContain('GreetingTexthellounscoped');
    expect(await page.content()).not.toContain('never-shown-s3cret');
    await page.getByText('Default Lifecycle').waitFor();
    await shot(page, 'topology');
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('table', { name: 'Projects by environment' }).getByText('1.0.0').first().waitFor();
    await shot(page, 'overview');
  }, 60_000);

  it('gives a View-only account no deploy button, and the API refuses it anyway', async () => {
    const context = await browser.newContext();
    const page = await signIn(context, viewer);
    await page.goto(`${plane.url}/projects/${projectId}`);
    await page.getByRole('table', { name: 'Releases by environment' }).waitFor();
    expect(await page.getByRole('button', { name: /^(Deploy|Promote) / }).count()).toBe(0);
    await page.getByText('your account lacks the Deploy role').first().waitFor();
    const refused = await page.evaluate(
      async (body) => {
        const session = await (await fetch('/api/session')).json();
        const response = await fetch('/api/release/promote', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrfToken },
          body: JSON.stringify(body),
        });
        return { status: response.status, body: await response.json() };
      },
      { projectId, version: '1.0.0', environments: ['Production'] },
    );
    expect(refused.status).toBe(401);
    expect(refused.body.errorcode).toBe(2003);
    await context.close();
  }, 60_000);

  it("keeps another workspace's project invisible", async () => {
    const context = await browser.newContext();
    const page = await signIn(context, viewer);
    await page.getByRole('table', { name: 'Projects by environment' }).waitFor();
    expect(await page.getByText(otherProjectName).count()).toBe(0);
    const options = await page.getByLabel('Workspace').locator('option').allTextContents();
    expect(options).toEqual(['Main']);
    const other = (
      await admin.get('/api/project', {
        workspaceId: (await admin.get('/api/workspace')).body.workspaces.find(
          (w: { name: string }) => w.name === 'Elsewhere',
        ).workspaceId,
      })
    ).body.projects[0].projectId;
    await page.goto(`${plane.url}/projects/${other}`);
    await page.getByRole('alert').getByText('Invalid projectId: not found').waitFor();
    expect(await page.getByText(otherProjectName).count()).toBe(0);
    await context.close();
  }, 60_000);

  it('answers a path it does not know with its own page under 404, and the API with its JSON', async () => {
    const context = await browser.newContext();
    const page = await signIn(context, viewer);
    const response = await page.goto(`${plane.url}/machines?old=bookmark`);
    expect(response?.status()).toBe(404);
    expect(response?.headers()['content-type']).toMatch(/^text\/html/);
    await page.getByText('No such page.').waitFor();
    await page.getByRole('link', { name: 'Go to your workspace' }).click();
    await page.getByRole('table', { name: 'Projects by environment' }).waitFor();
    for (const url of ['/api/nope', '/assets/nope.js']) {
      const answer = await fetch(plane.url + url, { headers: { accept: 'text/html' } });
      expect(answer.status).toBe(404);
      expect((await answer.json()).errorcode).toBe(3001);
    }
    const posted = await fetch(`${plane.url}/machines`, { method: 'POST', headers: { accept: 'text/html' } });
    expect(posted.status).toBe(404);
    expect((await posted.json()).error).toBe('Unknown route: POST /machines');
    await context.close();
  }, 60_000);

  it('ends the session on sign-out', async () => {
    const context = adminPage.context();
    const before = (await context.cookies()).find((c) => c.name === 'gantry_session')!.value;
    await adminPage.getByRole('button', { name: 'Sign out' }).click();
    await adminPage.getByRole('heading', { name: 'Sign in to Gantry' }).waitFor();
    expect((await context.cookies()).find((c) => c.name === 'gantry_session')).toBeUndefined();
    const replayed = await fetch(`${plane.url}/api/session`, { headers: { cookie: `gantry_session=${before}` } });
    expect(replayed.status).toBe(401);
    expect((await replayed.json()).errorcode).toBe(2002);
    await adminPage.goto(`${plane.url}/workspaces/${workspaceId}`);
    await adminPage.getByRole('heading', { name: 'Sign in to Gantry' }).waitFor();
    await context.close();
  }, 60_000);
});
