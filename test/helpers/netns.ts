/**
 * A second network host on this machine: a network namespace joined to the host by a veth pair
 * (Debian's iproute2; needs root). `cut()` / `restore()` take the host side of the link down and up —
 * a cable pulled, with no RST or FIN for either side to notice.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] });

export interface NetworkHost {
  /** The host's address as seen from inside the namespace. */
  readonly hostAddress: string;
  spawn(command: string, args: string[], env: Record<string, string>): ChildProcess;
  cut(): void;
  restore(): void;
  remove(): void;
}

export function createNetworkHost(): NetworkHost {
  const id = randomBytes(3).toString('hex');
  const ns = `gantry-${id}`;
  const hostSide = `gh${id}`;
  const nsSide = `gn${id}`;
  // A /30 per namespace from 10.213.0.0/16, picked by the random ID: runs side by side do not collide.
  const block = parseInt(id, 16) % 16_000;
  const base = `10.213.${Math.floor(block / 64)}.${(block % 64) * 4}`;
  const [a, b, c] = base.split('.');
  const hostAddress = `${a}.${b}.${c}.${(block % 64) * 4 + 1}`;
  const nsAddress = `${a}.${b}.${c}.${(block % 64) * 4 + 2}`;
  ip('netns', 'add', ns);
  ip('link', 'add', hostSide, 'type', 'veth', 'peer', 'name', nsSide);
  ip('link', 'set', nsSide, 'netns', ns);
  ip('addr', 'add', `${hostAddress}/30`, 'dev', hostSide);
  ip('link', 'set', hostSide, 'up');
  ip('netns', 'exec', ns, 'ip', 'addr', 'add', `${nsAddress}/30`, 'dev', nsSide);
  ip('netns', 'exec', ns, 'ip', 'link', 'set', nsSide, 'up');
  ip('netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up');
  return {
    hostAddress,
    spawn: (command, args, env) =>
      spawn('ip', ['netns', 'exec', ns, command, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] }),
    cut: () => ip('link', 'set', hostSide, 'down'),
    restore: () => ip('link', 'set', hostSide, 'up'),
    remove() {
      try {
        ip('link', 'del', hostSide);
      } catch {
        // already gone with the namespace
      }
      ip('netns', 'del', ns);
    },
  };
}
