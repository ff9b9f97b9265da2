/**
 * The ports a server names to its embedded PostgreSQL, which picks a free port of its own while
 * they are still unbound (a CI run once saw it take the HTTP port, then the HTTP listen failed
 * with EADDRINUSE). That race cannot be forced here, since the kernel picks the port, so this
 * test checks the list the server hands over.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../services/config.ts';
import { listenPorts } from '../../services/server.ts';

describe('the ports a server avoids for its embedded PostgreSQL', () => {
  it('are its HTTP, gRPC and metrics ports', () => {
    const config = loadConfig({ GANTRY_PORT: '41001', GANTRY_GRPC_PORT: '41002', GANTRY_METRICS_PORT: '41003' });
    expect(listenPorts(config)).toEqual([41001, 41002, 41003]);
  });

  it('leave out a port the system picks (0) and metrics turned off', () => {
    const config = loadConfig({ GANTRY_PORT: '41001', GANTRY_GRPC_PORT: '0', GANTRY_METRICS_PORT: 'off' });
    expect(listenPorts(config)).toEqual([41001]);
  });
});
