import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../services/config.ts';

describe('loadConfig', () => {
  it('serves agents plaintext by default and TLS with both a certificate and a key file', () => {
    expect(loadConfig({}).grpcTls).toBeNull();
    expect(
      loadConfig({ GANTRY_GRPC_TLS_CERT_FILE: 'certs/server.pem', GANTRY_GRPC_TLS_KEY_FILE: '/etc/gantry/server.key' })
        .grpcTls,
    ).toEqual({
      certFile: path.resolve('certs/server.pem'),
      keyFile: '/etc/gantry/server.key',
    });
  });

  it('refuses a TLS certificate without its key, and the other way round', () => {
    expect(() => loadConfig({ GANTRY_GRPC_TLS_CERT_FILE: 'server.pem' })).toThrow(
      /Set both GANTRY_GRPC_TLS_CERT_FILE and GANTRY_GRPC_TLS_KEY_FILE/,
    );
    expect(() => loadConfig({ GANTRY_GRPC_TLS_KEY_FILE: 'server.key' })).toThrow(/Set both/);
  });

  it('waits 120 s for a lost agent unless GANTRY_AGENT_LOST_TIMEOUT_SECONDS says otherwise, and refuses nonsense', () => {
    expect(loadConfig({}).agentLostTimeoutSeconds).toBe(120);
    expect(loadConfig({ GANTRY_AGENT_LOST_TIMEOUT_SECONDS: '300' }).agentLostTimeoutSeconds).toBe(300);
    for (const bad of ['0', '-5', '2.5', 'soon', '86401']) {
      expect(() => loadConfig({ GANTRY_AGENT_LOST_TIMEOUT_SECONDS: bad })).toThrow(
        /GANTRY_AGENT_LOST_TIMEOUT_SECONDS must be a whole number of seconds from 1 to 86400/,
      );
    }
  });
});
