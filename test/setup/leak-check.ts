/**
 * Fails a test that leaves behind what it started: a child process (an agent), a listening server,
 * or a timer that keeps the process alive. Such leftovers make later tests slow or flaky and hide
 * cleanup that belongs in an afterEach/afterAll hook. What a file's beforeAll started is there
 * before each test and is not counted; a test's own leftovers get a short grace period to close
 * (a process exiting, a server finishing its close).
 */
import { afterEach, beforeEach, expect } from 'vitest';

const TRACKED = {
  ProcessWrap: 'child process',
  TCPServerWrap: 'listening TCP server',
  PipeServerWrap: 'listening socket server',
  Timeout: 'timer',
} as const;
type Kind = keyof typeof TRACKED;

const GRACE_MS = 3_000;

function counts(): Record<Kind, number> {
  const result = { ProcessWrap: 0, TCPServerWrap: 0, PipeServerWrap: 0, Timeout: 0 };
  for (const resource of process.getActiveResourcesInfo()) if (resource in result) result[resource as Kind]++;
  return result;
}

function leaks(before: Record<Kind, number>): string[] {
  const now = counts();
  return (Object.keys(TRACKED) as Kind[])
    .filter((kind) => now[kind] > before[kind])
    .map((kind) => `${now[kind] - before[kind]} ${TRACKED[kind]}(s)`);
}

let before: Record<Kind, number> | null = null;

beforeEach(() => {
  before = counts();
});

afterEach(async () => {
  if (!before) return;
  const baseline = before;
  before = null;
  const deadline = Date.now() + GRACE_MS;
  let left = leaks(baseline);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50).unref());
    left = leaks(baseline);
  }
  expect(left, 'left running after the test (close it in the test or an afterEach hook)').toEqual([]);
});
