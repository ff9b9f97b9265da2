import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentConfigError, EXIT_CONFIGURATION, parseAgentConfig, scriptBaseEnv } from '../../agent/config.ts';
import { agentBundle } from '../helpers/agent-bundle.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'gantry-agent-config-'));
const caFile = path.join(dir, 'ca.pem');
writeFileSync(caFile, 'ca');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('parseAgentConfig', () => {
  it('reads several comma-separated servers, the token, the home and the CA file', () => {
    const config = parseAgentConfig({
      GANTRY_SERVER: 'cp-1.local:8081, 10.0.0.2:9000',
      GANTRY_AGENT_TOKEN: 'tok',
      GANTRY_AGENT_HOME: 'rel/home',
      GANTRY_AGENT_CA_FILE: caFile,
    });
    expect(config).toMatchObject({
      servers: ['cp-1.local:8081', '10.0.0.2:9000'],
      registrationToken: 'tok',
      homeDir: path.resolve('rel/home'),
      caFile,
      shutdownGraceMs: 5000,
    });
  });

  it('defaults to the local control plane with plaintext when nothing is set', () => {
    expect(parseAgentConfig({})).toMatchObject({
      servers: ['127.0.0.1:8081'],
      registrationToken: undefined,
      caFile: undefined,
    });
  });

  it('keeps finished tasks 7 days unless GANTRY_AGENT_RETENTION_DAYS says otherwise, and refuses a retention that is not above 0', () => {
    expect(parseAgentConfig({}).retentionMs).toBe(7 * 24 * 3600 * 1000);
    expect(parseAgentConfig({ GANTRY_AGENT_RETENTION_DAYS: '0.5' }).retentionMs).toBe(12 * 3600 * 1000);
    for (const bad of ['0', '-1', 'week']) {
      expect(() => parseAgentConfig({ GANTRY_AGENT_RETENTION_DAYS: bad })).toThrow(
        `GANTRY_AGENT_RETENTION_DAYS='${bad}' is not accepted: expected a number of days above 0 (e.g. 7 or 0.5)`,
      );
    }
  });

  it('takes the unpacked-size cap from GANTRY_AGENT_MAX_UNPACKED_BYTES, and refuses one that is not a positive byte count', () => {
    expect(parseAgentConfig({}).maxUnpackedBytes).toBeUndefined();
    expect(parseAgentConfig({ GANTRY_AGENT_MAX_UNPACKED_BYTES: '8589934592' }).maxUnpackedBytes).toBe(8 * 1024 ** 3);
    for (const bad of ['0', '-5', '1.5', '8G']) {
      expect(() => parseAgentConfig({ GANTRY_AGENT_MAX_UNPACKED_BYTES: bad })).toThrow(
        /GANTRY_AGENT_MAX_UNPACKED_BYTES='.*' is not accepted: expected a whole number of bytes above 0/,
      );
    }
  });

  it('refuses a server that is not host:port', () => {
    expect(() => parseAgentConfig({ GANTRY_SERVER: 'http://cp:8081' })).toThrow(AgentConfigError);
    expect(() => parseAgentConfig({ GANTRY_SERVER: 'cp:99999' })).toThrow(
      "GANTRY_SERVER='cp:99999' is not accepted: expected host:port (e.g. gantry.example.com:8081)",
    );
    expect(() => parseAgentConfig({ GANTRY_SERVER: ' , ' })).toThrow(/GANTRY_SERVER=' , ' is not accepted/);
  });

  it('refuses an unknown log level, an unreadable CA file and a bad grace period, naming each', () => {
    expect(() =>
      parseAgentConfig({
        GANTRY_AGENT_LOG_LEVEL: 'chatty',
        GANTRY_AGENT_CA_FILE: path.join(dir, 'missing.pem'),
        GANTRY_AGENT_SHUTDOWN_GRACE_MS: '-1',
      }),
    ).toThrow(
      [
        "GANTRY_AGENT_CA_FILE='" +
          path.join(dir, 'missing.pem') +
          "' is not accepted: expected the path of a readable PEM CA certificate file",
        "GANTRY_AGENT_LOG_LEVEL='chatty' is not accepted: expected one of fatal, error, warn, info, debug, trace, silent",
        "GANTRY_AGENT_SHUTDOWN_GRACE_MS='-1' is not accepted: expected a whole number of milliseconds from 0 to 3600000",
      ].join('\n  '),
    );
  });
});

describe('the agent process with a bad configuration', () => {
  it('does not start: it exits 78 (EX_CONFIG) naming the variable and the accepted values, and never echoes the token', async () => {
    const child = spawn(process.execPath, [agentBundle()], {
      env: {
        PATH: process.env.PATH,
        GANTRY_SERVER: 'https://gantry.example.com',
        GANTRY_AGENT_LOG_LEVEL: 'loud',
        GANTRY_AGENT_TOKEN: 'tok-secret-123',
        GANTRY_AGENT_HOME: path.join(dir, 'home'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(EXIT_CONFIGURATION);
    expect(stderr).toContain(
      "GANTRY_SERVER='https://gantry.example.com' is not accepted: expected host:port (e.g. gantry.example.com:8081), several separated by commas",
    );
    expect(stderr).toContain("GANTRY_AGENT_LOG_LEVEL='loud' is not accepted: expected one of fatal, error, warn");
    expect(stderr).not.toContain('tok-secret-123');
  }, 60_000);
});

describe('scriptBaseEnv', () => {
  it('drops the agent own GANTRY_* settings so scripts never see the token', () => {
    expect(scriptBaseEnv({ PATH: '/bin', GANTRY_AGENT_TOKEN: 'secret', GANTRY_SERVER: 'x:1', HOME: '/root' })).toEqual({
      PATH: '/bin',
      HOME: '/root',
    });
  });
});
