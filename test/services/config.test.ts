import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigurationError, EXIT_CONFIGURATION, loadConfig } from '../../services/config.ts';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(path.join(tmpdir(), 'gantry-config-'));
const certFile = path.join(dir, 'server.pem');
const keyFile = path.join(dir, 'server.key');
writeFileSync(certFile, 'cert');
writeFileSync(keyFile, 'key');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('loadConfig', () => {
  it('serves agents plaintext by default and TLS with both a certificate and a key file', () => {
    expect(loadConfig({}).grpcTls).toBeNull();
    expect(loadConfig({ GANTRY_GRPC_TLS_CERT_FILE: certFile, GANTRY_GRPC_TLS_KEY_FILE: keyFile }).grpcTls).toEqual({
      certFile,
      keyFile,
    });
  });

  it('refuses a TLS certificate without its key, and the other way round', () => {
    expect(() => loadConfig({ GANTRY_GRPC_TLS_CERT_FILE: certFile })).toThrow(
      /Set both GANTRY_GRPC_TLS_CERT_FILE and GANTRY_GRPC_TLS_KEY_FILE/,
    );
    expect(() => loadConfig({ GANTRY_GRPC_TLS_KEY_FILE: keyFile })).toThrow(/Set both/);
  });

  it('waits 120 s for a lost agent unless GANTRY_AGENT_LOST_TIMEOUT_SECONDS says otherwise, and refuses nonsense', () => {
    expect(loadConfig({}).agentLostTimeoutSeconds).toBe(120);
    expect(loadConfig({ GANTRY_AGENT_LOST_TIMEOUT_SECONDS: '300' }).agentLostTimeoutSeconds).toBe(300);
    for (const bad of ['0', '-5', '2.5', 'soon', '86401', '0x10']) {
      expect(() => loadConfig({ GANTRY_AGENT_LOST_TIMEOUT_SECONDS: bad })).toThrow(
        `GANTRY_AGENT_LOST_TIMEOUT_SECONDS='${bad}' is not accepted: expected a whole number of seconds from 1 to 86400`,
      );
    }
  });

  it('takes at most 350 heartbeats a second unless GANTRY_AGENT_HEARTBEATS_PER_SECOND says otherwise, and refuses nonsense', () => {
    expect(loadConfig({}).agentHeartbeatsPerSecond).toBe(350);
    expect(loadConfig({ GANTRY_AGENT_HEARTBEATS_PER_SECOND: '1000' }).agentHeartbeatsPerSecond).toBe(1000);
    for (const bad of ['0', '-1', '1.5', 'many']) {
      expect(() => loadConfig({ GANTRY_AGENT_HEARTBEATS_PER_SECOND: bad })).toThrow(
        `GANTRY_AGENT_HEARTBEATS_PER_SECOND='${bad}' is not accepted: expected a whole number of heartbeats a second from 1 to 1000000`,
      );
    }
  });

  it('holds at most 30 PostgreSQL connections unless GANTRY_DB_POOL_MAX says otherwise', () => {
    expect(loadConfig({}).dbPoolMax).toBe(30);
    expect(loadConfig({ GANTRY_DB_POOL_MAX: '12' }).dbPoolMax).toBe(12);
    for (const bad of ['0', '-1', '2.5', 'many', '1001'])
      expect(() => loadConfig({ GANTRY_DB_POOL_MAX: bad })).toThrow(`GANTRY_DB_POOL_MAX='${bad}' is not accepted`);
  });

  it('serves metrics on 9464 unless GANTRY_METRICS_PORT says another port or off, never on the API port', () => {
    expect(loadConfig({}).metricsPort).toBe(9464);
    expect(loadConfig({ GANTRY_METRICS_PORT: '9100' }).metricsPort).toBe(9100);
    expect(loadConfig({ GANTRY_METRICS_PORT: 'off' }).metricsPort).toBeNull();
    expect(() => loadConfig({ GANTRY_PORT: '9000', GANTRY_METRICS_PORT: '9000' })).toThrow(
      'GANTRY_METRICS_PORT must differ from GANTRY_PORT (9000)',
    );
  });

  it('applies the defaults when nothing is set, and treats an empty variable as unset', () => {
    expect(loadConfig({ GANTRY_PORT: '', NATS_URL: '' })).toMatchObject({
      httpPort: 8080,
      grpcPort: 8081,
      httpHost: '0.0.0.0',
      natsUrl: null,
      databaseUrl: null,
      logLevel: 'info',
      publicUrl: 'http://127.0.0.1:8080',
      natsPrefix: 'gantry',
    });
  });

  it('accepts libpq URLs, including the Unix-socket form WHATWG URL refuses', () => {
    for (const url of ['postgres://gantry:pw@db:5432/gantry', 'postgresql://u@/gantry?host=%2Fvar%2Frun%2Fpg&port=5']) {
      expect(loadConfig({ DATABASE_URL: url }).databaseUrl).toBe(url);
    }
  });

  it.each([
    ['GANTRY_PORT', '70000', 'a port number from 0 to 65535'],
    ['GANTRY_GRPC_PORT', 'eighty', 'a port number from 0 to 65535'],
    ['GANTRY_LOG_LEVEL', 'verbose', 'one of fatal, error, warn, info, debug, trace, silent'],
    ['GANTRY_PUBLIC_URL', 'gantry.example.com', 'an http:// or https:// URL'],
    ['NATS_URL', 'http://nats:4222', 'nats://host:port'],
    ['GANTRY_NATS_PREFIX', 'my.prefix', '1-64 of A-Z a-z 0-9 _ -'],
    ['GANTRY_GRPC_TLS_CERT_FILE', '/nonexistent/server.pem', 'the path of a readable PEM certificate chain file'],
    ['GANTRY_GRPC_TLS_KEY_FILE', '/tmp', 'the path of a readable PEM private key file'],
    ['GANTRY_HOST', 'host name', 'a host name or an IP address'],
    ['GANTRY_HEAP_MB', '12', 'a whole number of MiB from 256'],
    ['GANTRY_AZURE_STORAGE_CONTAINER', 'Bad_Name', 'an Azure container name'],
    ['GANTRY_METRICS_PORT', '65536', 'a port number from 0 to 65535 (0 picks a free port), or off'],
    ['GANTRY_METRICS_PORT', 'on', 'a port number from 0 to 65535 (0 picks a free port), or off'],
  ])('refuses %s=%s, naming the variable and what it accepts', (name, value, accepted) => {
    expect(() => loadConfig({ [name]: value })).toThrow(`${name}='${value}' is not accepted: expected ${accepted}`);
  });

  it('refuses a malformed DATABASE_URL and master key without echoing them (they hold secrets)', () => {
    const error = (() => {
      try {
        loadConfig({ DATABASE_URL: 'mysql://root:hunter2@db/gantry', GANTRY_MASTER_KEY: 'c2hvcnQ=' });
      } catch (caught) {
        return caught as ConfigurationError;
      }
      throw new Error('accepted');
    })();
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(error.problems).toEqual([
      expect.stringMatching(
        /^DATABASE_URL=\(value hidden\) is not accepted: expected a postgres:\/\/ or postgresql:\/\//,
      ),
      'GANTRY_MASTER_KEY=(value hidden) is not accepted: expected base64 of exactly 32 bytes',
    ]);
    expect(error.message).not.toContain('hunter2');
  });
});

describe('the control-plane process with a bad configuration', () => {
  it('does not start: it exits 78 (EX_CONFIG) and names every refused variable with the accepted values', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'services/main.ts'], {
      cwd: repoRoot,
      env: {
        PATH: process.env.PATH,
        GANTRY_DATA_DIR: path.join(dir, 'data'),
        GANTRY_PORT: '70000',
        GANTRY_LOG_LEVEL: 'loud',
        DATABASE_URL: 'not a url',
        GANTRY_GRPC_TLS_CERT_FILE: path.join(dir, 'missing.pem'),
        GANTRY_GRPC_TLS_KEY_FILE: keyFile,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(EXIT_CONFIGURATION);
    expect(stderr).toContain('Gantry did not start: invalid configuration');
    expect(stderr).toContain("GANTRY_PORT='70000' is not accepted: expected a port number from 0 to 65535");
    expect(stderr).toContain(
      "GANTRY_LOG_LEVEL='loud' is not accepted: expected one of fatal, error, warn, info, debug, trace, silent",
    );
    expect(stderr).toContain(
      'DATABASE_URL=(value hidden) is not accepted: expected a postgres:// or postgresql:// URL',
    );
    expect(stderr).toContain(
      `GANTRY_GRPC_TLS_CERT_FILE='${path.join(dir, 'missing.pem')}' is not accepted: expected the path of a readable PEM certificate chain file`,
    );
    expect(stderr).not.toContain('    at '); // a message for an operator, not a stack trace
  }, 30_000);
});
