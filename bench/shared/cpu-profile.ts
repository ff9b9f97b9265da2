/**
 * Where a .cpuprofile (node --cpu-prof) spent its time, optionally only between two monotonic
 * times in µs (process.hrtime: the clock V8's profile uses, the same for every process on the
 * host, so a bench can print a phase's bounds, e.g. bench/fleet's idle window with --profile).
 *
 *   npx tsx bench/shared/cpu-profile.ts FILE.cpuprofile [FROM_US TO_US] [--top 30]
 *
 * Prints the busy share of the main thread (samples not in "(idle)") and the functions by self and
 * by inclusive time. Only the main JS thread is in a profile: the kernel's network work and V8's
 * GC helper threads are not (compare with the process's CPU from /proc).
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const topAt = args.indexOf('--top');
const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 30;
const [file, fromArg, toArg] = args;
if (!file) {
  console.error('usage: cpu-profile.ts FILE.cpuprofile [FROM_US TO_US] [--top N]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const from = fromArg ? Number(fromArg) : profile.startTime;
const to = toArg ? Number(toArg) : profile.endTime;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parentOf = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
const nameOf = (node: ProfileNode) => {
  const { functionName, url, lineNumber } = node.callFrame;
  return `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
};

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
let sampled = 0;
let idle = 0;
let at = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  at += profile.timeDeltas[i]!;
  if (at < from || at > to) continue;
  // A sample stands for the time until the next one.
  const span = profile.timeDeltas[i + 1] ?? 0;
  const node = byId.get(profile.samples[i]!)!;
  sampled += span;
  if (node.callFrame.functionName === '(idle)') {
    idle += span;
    continue;
  }
  self.set(nameOf(node), (self.get(nameOf(node)) ?? 0) + span);
  // Each function once per sample, however deep its recursion.
  const seen = new Set<string>();
  for (let id: number | undefined = node.id; id !== undefined; id = parentOf.get(id)) {
    const name = nameOf(byId.get(id)!);
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + span);
  }
}

const ms = (us: number) => (us / 1000).toFixed(1).padStart(9);
const busy = sampled - idle;
console.log(
  `window ${ms(to - from)} ms; busy ${ms(busy)} ms = ${((busy / Math.max(1, to - from)) * 100).toFixed(2)} % of the main thread`,
);
for (const [title, table] of [
  ['self', self],
  ['inclusive', inclusive],
] as const) {
  console.log(`\n--- ${title} (ms)`);
  for (const [name, us] of [...table].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${ms(us)}  ${name}`);
}
