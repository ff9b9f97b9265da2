import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentConfigError, parseAgentConfig, scriptBaseEnv } from '../../agent/config.ts';

describe('parseAgentConfig', () => {
  it('reads several comma-separated servers, the token, the home and the CA file', () => {
    const config = parseAgentConfig({
      GANTRY_SERVER: 'cp-1.local:8081, 10.0.0.2:9000',
      GANTRY_AGENT_TOKEN: 'tok',
      GANTRY_AGENT_HOME: 'rel/home',
      GANTRY_AGENT_CA_FILE: '/etc/gantry/ca.pem',
    });
    expect(config).toMatchObject({
      servers: ['cp-1.local:8081', '10.0.0.2:9000'],
      registrationToken: 'tok',
      homeDir: path.resolve('rel/home'),
      caFile: '/etc/gantry/ca.pem',
      shutdownGraceMs: 5000,
    });
  });

  it('defaults to the local control plane over TLS with the system CAs when nothing is set', () => {
    expect(parseAgentConfig({})).toMatchObject({
      servers: ['127.0.0.1:8081'],
      registrationToken: undefined,
      caFile: undefined,
      caFingerprint: undefined,
      insecure: false,
    });
  });

  it('pins a CA fingerprint however it was pasted, from the variable or --ca-fingerprint, and takes --ca-file and --insecure', () => {
    const hex = 'ab'.repeat(32);
    const colons = hex.toUpperCase().match(/../g)!.join(':');
    expect(parseAgentConfig({ GANTRY_AGENT_CA_FINGERPRINT: colons }).caFingerprint).toBe(hex);
    expect(parseAgentConfig({}, ['--ca-fingerprint', `sha256:${hex}`]).caFingerprint).toBe(hex);
    expect(parseAgentConfig({}, [`--ca-file=/etc/ca.pem`]).caFile).toBe('/etc/ca.pem');
    expect(parseAgentConfig({}, ['--insecure']).insecure).toBe(true);
    expect(parseAgentConfig({ GANTRY_AGENT_INSECURE: '1' }).insecure).toBe(true);
    expect(() => parseAgentConfig({ GANTRY_AGENT_CA_FINGERPRINT: 'abc' })).toThrow(/must be a SHA-256 fingerprint/);
    expect(() => parseAgentConfig({ GANTRY_AGENT_CA_FINGERPRINT: hex, GANTRY_AGENT_INSECURE: '1' })).toThrow(
      /not several/,
    );
    expect(() => parseAgentConfig({}, ['--ca-file'])).toThrow(/needs a value/);
    expect(() => parseAgentConfig({}, ['--tls-off'])).toThrow(/Unknown option --tls-off/);
  });

  it('keeps finished tasks 7 days unless GANTRY_AGENT_RETENTION_DAYS says otherwise, and refuses a retention that is not above 0', () => {
    expect(parseAgentConfig({}).retentionMs).toBe(7 * 24 * 3600 * 1000);
    expect(parseAgentConfig({ GANTRY_AGENT_RETENTION_DAYS: '0.5' }).retentionMs).toBe(12 * 3600 * 1000);
    for (const bad of ['0', '-1', 'week', '']) {
      expect(() => parseAgentConfig({ GANTRY_AGENT_RETENTION_DAYS: bad })).toThrow(
        /GANTRY_AGENT_RETENTION_DAYS must be a number of days above 0/,
      );
    }
  });

  it('takes the unpacked-size cap from GANTRY_AGENT_MAX_UNPACKED_BYTES, and refuses one that is not a positive byte count', () => {
    expect(parseAgentConfig({}).maxUnpackedBytes).toBeUndefined();
    expect(parseAgentConfig({ GANTRY_AGENT_MAX_UNPACKED_BYTES: '8589934592' }).maxUnpackedBytes).toBe(8 * 1024 ** 3);
    for (const bad of ['0', '-5', '1.5', '8G']) {
      expect(() => parseAgentConfig({ GANTRY_AGENT_MAX_UNPACKED_BYTES: bad })).toThrow(
        /GANTRY_AGENT_MAX_UNPACKED_BYTES must be a whole number of bytes above 0/,
      );
    }
  });

  it('refuses a server that is not host:port', () => {
    expect(() => parseAgentConfig({ GANTRY_SERVER: 'http://cp:8081' })).toThrow(AgentConfigError);
    expect(() => parseAgentConfig({ GANTRY_SERVER: 'cp:99999' })).toThrow(/is not host:port/);
  });
});

describe('scriptBaseEnv', () => {
  it('drops the agent own GANTRY_* settings so scripts never see the token', () => {
    expect(scriptBaseEnv({ PATH: '/bin', GANTRY_AGENT_TOKEN: 'secret', GANTRY_SERVER: 'x:1', HOME: '/root' })).toEqual({
      PATH: '/bin',
      HOME: '/root',
    });
  });
});
