/**
 * The browser tests' fixtures: Debian's Chromium driven by playwright-core (no browser download;
 * scripts/ensure-services.sh installs `chromium` when it is missing), and the dashboard built once
 * per change of its sources (the same build `npm start` runs).
 */
import { execFile, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** The flags this workplace's closed network needs (no background traffic to blocked hosts). */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

function chromiumPath(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('chromium is not installed: run `bash scripts/ensure-services.sh` (npm test does)');
  }
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), args: CHROMIUM_ARGS, headless: true });
}

/**
 * Builds dist/dashboard unless it is already built from these sources: the command `npm start`
 * runs, in a process of its own so that vitest's NODE_ENV=test cannot turn it into a development build.
 */
export async function ensureDashboardBuilt(): Promise<void> {
  await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/build-dashboard.ts', '--if-stale'], {
    cwd: fileURLToPath(new URL('../../', import.meta.url)),
    env: { ...process.env, NODE_ENV: 'production' },
  });
}

/** A new page of `context` signed in to the dashboard at `baseUrl`, as a person signs in. */
export async function signIn(
  context: BrowserContext,
  baseUrl: string,
  credentials: { id: string; key: string },
): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${baseUrl}/`);
  await page.getByLabel('Service account ID').fill(credentials.id);
  await page.getByLabel('API key').fill(credentials.key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  return page;
}
