/**
 * GET /api/agent/install.sh and the bundle it downloads (public, no secret inside), and the exact
 * install command POST /api/machine answers. The script's behaviour on a real systemd is proven by
 * test/system/agent-install.system.ts; here: what is served, and that the script refuses bad input.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../services/core/index.ts';
import { loadAgentDistribution, type AgentDistribution } from '../../../services/packages/index.ts';
import { agentBundle } from '../../helpers/agent-bundle.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let bare: TestContext;
let distribution: AgentDistribution;

beforeAll(async () => {
  const loaded = await loadAgentDistribution(path.dirname(agentBundle()), createLogger('silent'));
  if (!loaded) throw new Error('the agent build has no bundle');
  distribution = loaded;
  [t, bare] = await Promise.all([testApp({ agentDistribution: distribution }), testApp()]);
});

const get = (ctx: TestContext, url: string, host = 'gantry.example.com:8080') =>
  ctx.app.inject({ method: 'GET', url, headers: { host } });

describe('GET /api/agent/install.sh', () => {
  it('serves the script without credentials, naming this bundle and its sha256 and the address it was fetched from', async () => {
    const response = await get(t, '/api/agent/install.sh');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/x-shellscript; charset=utf-8');
    const script = response.body;
    expect(script).toMatch(/^#!\/bin\/sh\n/);
    expect(script).toContain(`GANTRY_URL='http://gantry.example.com:8080'`);
    expect(script).toContain(`AGENT_VERSION='${distribution.version}'`);
    expect(script).toContain(`BUNDLE_NAME='gantry-agent-${distribution.version}.tar.gz'`);
    expect(script).toContain(`BUNDLE_SHA256='${distribution.sha256}'`);
    expect(script).not.toMatch(/@@[A-Z_]+@@/);
    // POSIX sh parses it (dash is Debian's /bin/sh).
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'gantry-install-')), 'install.sh');
    writeFileSync(file, script);
    execFileSync('sh', ['-n', file]);
  });

  it('refuses unknown options and malformed values before touching anything', async () => {
    const script = (await get(t, '/api/agent/install.sh')).body;
    const run = (...args: string[]) => spawnSync('sh', ['-s', '--', ...args], { input: script, encoding: 'utf8' });
    const unknown = run('--tokn', 'x');
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain("gantry-agent: unknown option '--tokn'");
    const injected = run('--server', 'host:8081\nGANTRY_AGENT_HOME=/etc', '--token', 'abcdefgh12');
    expect(injected.status).toBe(1);
    expect(injected.stderr).toContain('--server');
    expect(injected.stderr).toContain('is not valid');
    const noValue = run('--token');
    expect(noValue.status).toBe(1);
    expect(noValue.stderr).toContain('--token needs a value');
  });

  it('uses GANTRY_PUBLIC_URL-free origins only when the Host header is plain', async () => {
    const response = await get(t, '/api/agent/install.sh', "evil.example';rm -rf /;'");
    expect(response.statusCode).toBe(200);
    expect(response.body).not.toContain('evil.example');
  });

  it('answers 503 with the error body when no agent was built', async () => {
    const response = await get(bare, '/api/agent/install.sh');
    expect(response.statusCode).toBe(503);
    expect(JSON.parse(response.body)).toMatchObject({
      errorcode: 1001,
      error: expect.stringContaining('npm run build:agent'),
    });
  });
});

describe('GET /api/agent/bundle/<name>', () => {
  it('serves the bundle whose sha256 the script checks', async () => {
    const response = await get(t, `/api/agent/bundle/${distribution.archiveName}`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/gzip');
    expect(createHash('sha256').update(response.rawPayload).digest('hex')).toBe(distribution.sha256);
    // The single-file agent and its contract, nothing else.
    const dir = mkdtempSync(path.join(tmpdir(), 'gantry-bundle-'));
    writeFileSync(path.join(dir, 'b.tgz'), response.rawPayload);
    expect(
      execFileSync('tar', ['-tzf', path.join(dir, 'b.tgz')], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .sort(),
    ).toEqual(['gantry-agent.mjs', 'gantry/agent/v1/agent.proto'].sort());
  });

  it('answers 400 for any other name, and GET /api/agent/version names the bundle', async () => {
    const other = await get(t, '/api/agent/bundle/..%2F..%2Fetc%2Fpasswd');
    expect(other.statusCode).toBe(400);
    expect(JSON.parse(other.body)).toMatchObject({ errorcode: 3001 });
    const version = await get(t, '/api/agent/version');
    expect(JSON.parse(version.body)).toEqual({
      version: distribution.version,
      bundle: distribution.archiveName,
      sha256: distribution.sha256,
    });
  });
});

describe('POST /api/machine', () => {
  it('answers the exact one-line install command for the new machine', async () => {
    const created = await t.admin.post('/api/machine', { workspaceId: t.mainWorkspaceId, name: 'one-liner' });
    expect(created.status).toBe(200);
    expect(created.body.installCommand).toBe(
      `curl -fsSL http://localhost:80/api/agent/install.sh | sudo sh -s -- --server localhost:8081 --token ${created.body.registrationToken}`,
    );
  });
});
