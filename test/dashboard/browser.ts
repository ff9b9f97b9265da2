/**
 * The browser tests' fixtures: Debian's Chromium driven by playwright-core (no browser download;
 * scripts/ensure-services.sh installs `chromium` when it is missing), and the dashboard built once
 * per change of its sources (the same build `npm start` runs).
 */
import { execFileSync } from 'node:child_process';
import { chromium, type Browser } from 'playwright-core';
import { buildDashboard } from '../../scripts/build-dashboard.ts';

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

/** Builds dist/dashboard unless it is already built from these sources. */
export async function ensureDashboardBuilt(): Promise<void> {
  await buildDashboard({ ifStale: true, quiet: true });
}
