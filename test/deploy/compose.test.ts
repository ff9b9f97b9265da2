/**
 * docker-compose.yml and the Dockerfile by structure: the clustered topology the e2e suite also
 * runs as local processes. The file is also started for real on images made without a registry
 * (test/system/compose-stack.system.ts, scripts/compose-images.sh).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../services/config.ts';
import { parse } from 'yaml';

const root = path.resolve(import.meta.dirname, '../..');
const compose: unknown = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'));

type Service = {
  image?: string;
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  restart?: string;
};

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const services = (isMap(compose) && isMap(compose.services) ? compose.services : {}) as unknown as Record<
  string,
  Service
>;
const replicas = ['control-plane-1', 'control-plane-2'] as const;
const agents = ['agent-1', 'agent-2', 'agent-3'] as const;

function service(name: string): Service {
  const found = services[name];
  if (!found) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
}

function env(name: string): Record<string, string> {
  return service(name).environment ?? {};
}

/** Values for the required variables, shaped as the configuration schema accepts them. */
const REQUIRED_SAMPLES: Record<string, string> = {
  GANTRY_MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
  GANTRY_ENROLLMENT_KEY: 'sample-GANTRY_ENROLLMENT_KEY-0123456789',
};

/** A service's environment as compose would pass it, with sample values for the required variables. */
function interpolated(name: string): Record<string, string> {
  return Object.fromEntries(Object.entries(env(name)).map(([k, v]) => [k, interpolate(v)]));
}

function interpolate(value: string): string {
  return value.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_m, variable: string, kind?: string, rest?: string) =>
    kind === '-' ? (rest ?? '') : (REQUIRED_SAMPLES[variable] ?? `<${variable}>`),
  );
}

/** The control plane's configuration as a replica's environment gives it. */
function configOf(name: string) {
  return loadConfig(interpolated(name));
}

describe('docker-compose.yml', () => {
  it('declares postgres, NATS with JetStream, two control planes and three agents', () => {
    expect(Object.keys(services).sort()).toEqual([
      'agent-1',
      'agent-2',
      'agent-3',
      'control-plane-1',
      'control-plane-2',
      'nats',
      'postgres',
    ]);
    expect(service('postgres').image).toBe('postgres:15');
    expect(service('nats').image).toMatch(/^nats:2\.10(-|$)/);
    expect(service('nats').command).toContain('-js');
  });

  it("runs on Debian's docker-compose 1.29 with the images scripts/compose-images.sh makes", () => {
    // 1.29 refuses a top-level `name` (a Compose v2 addition).
    expect(isMap(compose) && Object.keys(compose).sort()).toEqual(['services', 'volumes']);
    for (const name of [...replicas, ...agents]) {
      expect(service(name).image, name).toBe('gantry:latest');
      expect(service(name).build, name).toBe('.');
    }
  });

  it('points both replicas at the same PostgreSQL and NATS', () => {
    const [first, second] = replicas.map(env) as [Record<string, string>, Record<string, string>];
    expect(first.DATABASE_URL).toBeDefined();
    expect(second.DATABASE_URL).toBe(first.DATABASE_URL);
    expect(second.NATS_URL).toBe(first.NATS_URL);
    expect(new URL(interpolate(first.DATABASE_URL ?? '')).host).toBe('postgres:5432');
    expect(first.NATS_URL).toBe('nats://nats:4222');
    // Secrets written by one replica must be readable by the other.
    expect(second.GANTRY_MASTER_KEY).toBe(first.GANTRY_MASTER_KEY);
    // TLS by default: neither replica opts out.
    expect(first.GANTRY_GRPC_INSECURE ?? second.GANTRY_GRPC_INSECURE).toBeUndefined();
  });

  it('runs each replica with npm start, bootstrap credentials from the environment and its own ports', () => {
    const ports = replicas.map((name) => {
      const replica = service(name);
      const variables = env(name);
      expect(replica.build).toBe('.');
      expect(replica.command).toEqual(['npm', 'start']);
      expect(variables.GANTRY_BOOTSTRAP_ACCOUNT_ID).toMatch(/^\$\{GANTRY_BOOTSTRAP_ACCOUNT_ID[:?}]/);
      expect(variables.GANTRY_BOOTSTRAP_API_KEY).toMatch(/^\$\{GANTRY_BOOTSTRAP_API_KEY[:?}]/);
      // The control plane's own config parser accepts exactly this environment.
      const config = loadConfig(Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, interpolate(v)])));
      expect(config.natsUrl).toBe('nats://nats:4222');
      expect(config.bootstrapEnrollmentKey).toBe('sample-GANTRY_ENROLLMENT_KEY-0123456789');
      expect(config.databaseUrl).toContain('@postgres:5432/');
      expect(replica.ports).toEqual([`${config.httpPort}:${config.httpPort}`, `${config.grpcPort}:${config.grpcPort}`]);
      return [config.httpPort, config.grpcPort];
    });
    expect(new Set(ports.flat()).size).toBe(4);
  });

  it('lists both replicas in every agent, which enroll themselves with the key the replicas create and pin their CA', () => {
    const grpcTargets = replicas.map((name) => `${name}:${configOf(name).grpcPort}`);
    const homes = agents.map((name) => {
      const agent = service(name);
      expect(agent.command).toEqual(['npm', 'run', 'agent']);
      expect(env(name).GANTRY_SERVER?.split(',')).toEqual(grpcTargets);
      // No manual token step: the replicas create GANTRY_ENROLLMENT_KEY as an enrollment key.
      expect(env(name).GANTRY_AGENT_ENROLLMENT_KEY).toBe('${GANTRY_ENROLLMENT_KEY:?set GANTRY_ENROLLMENT_KEY}');
      expect(env(name).GANTRY_AGENT_TOKEN).toBeUndefined();
      expect(env(name).GANTRY_AGENT_NAME).toBe(name);
      // TLS pinned to the replicas' shared CA: never plaintext.
      expect(env(name).GANTRY_AGENT_CA_FINGERPRINT).toMatch(/^\$\{GANTRY_AGENT_CA_FINGERPRINT[:?}-]/);
      expect(env(name).GANTRY_AGENT_INSECURE).toBeUndefined();
      return agent.volumes?.find((volume) => volume.endsWith(':/var/lib/gantry-agent'));
    });
    // Each agent keeps its own identity.
    expect(homes.every(Boolean)).toBe(true);
    expect(new Set(homes).size).toBe(agents.length);
  });

  it('starts in order: databases healthy, then replicas healthy, then agents', () => {
    for (const name of ['postgres', 'nats', ...replicas]) {
      expect(service(name).healthcheck?.test.length, `${name} healthcheck`).toBeGreaterThan(0);
    }
    for (const name of replicas) {
      expect(service(name).depends_on).toEqual({
        postgres: { condition: 'service_healthy' },
        nats: { condition: 'service_healthy' },
      });
      // The healthcheck probes the port this replica really listens on.
      expect(service(name).healthcheck?.test.join(' ')).toContain(`127.0.0.1:${configOf(name).httpPort}/readyz`);
    }
    for (const name of agents) {
      expect(service(name).depends_on).toEqual({
        'control-plane-1': { condition: 'service_healthy' },
        'control-plane-2': { condition: 'service_healthy' },
      });
    }
  });

  it("runs scripts that replace npm's shell with their process, so the SIGTERM npm passes on stops it", () => {
    // npm signals only its child: a shell around node would die and leave node running
    // (test/e2e/npm-start.e2e.test.ts shows it for npm start).
    const scripts = (
      JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts;
    const run = new Set(
      [...replicas, ...agents].map((name) => {
        const command = service(name).command ?? [];
        return command[1] === 'run' ? command[2]! : command[1]!;
      }),
    );
    expect([...run].sort()).toEqual(['agent', 'start']);
    for (const name of run) expect(scripts[name], name).toMatch(/^exec node /);
  });

  it('restarts every service that exits by itself, and none stopped by hand (compose-stack.system.ts crashes two)', () => {
    expect(Object.fromEntries(Object.entries(services).map(([name, s]) => [name, s.restart]))).toEqual(
      Object.fromEntries(Object.keys(services).map((name) => [name, 'unless-stopped'])),
    );
  });

  it('declares every named volume it mounts', () => {
    const declared = Object.keys(isMap(compose) && isMap(compose.volumes) ? compose.volumes : {});
    const mounted = Object.values(services).flatMap((s) => (s.volumes ?? []).map((v) => v.split(':')[0] ?? ''));
    expect([...new Set(mounted)].sort()).toEqual([...declared].sort());
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
  const instructions = dockerfile.split('\n').filter((line) => /^[A-Z]+\s/.test(line));

  it('builds from node:20-bookworm-slim with npm ci and starts with npm start', () => {
    expect(instructions[0]).toBe('FROM node:20-bookworm-slim');
    expect(instructions.some((line) => /^RUN npm ci\b/.test(line))).toBe(true);
    expect(instructions.at(-1)).toBe('CMD ["npm", "start"]');
    // The lockfile is copied before the sources so the dependency layer is cached.
    expect(dockerfile.indexOf('COPY package.json package-lock.json')).toBeLessThan(dockerfile.indexOf('COPY . .'));
  });

  it('reports health from GET /readyz (scripts/healthcheck.mjs, which the readiness test runs)', () => {
    expect(instructions).toContain(
      'HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["node", "scripts/healthcheck.mjs"]',
    );
  });

  it('keeps local dependencies and data out of the build context', () => {
    const ignored = readFileSync(path.join(root, '.dockerignore'), 'utf8').split('\n');
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'data', '.git']));
  });
});
