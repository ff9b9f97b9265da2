import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAgentProto, PROTO_ROOT } from '../../../agent/connection/proto.ts';

describe('agent.proto', () => {
  it('loads with the agent service and its four methods', () => {
    const service = loadAgentProto().gantry.agent.v1.AgentService.service;
    expect(Object.keys(service).sort()).toEqual(['Connect', 'DownloadAgentBundle', 'DownloadPackage', 'Register']);
    expect(service.Connect.requestStream && service.Connect.responseStream).toBe(true);
    expect(service.DownloadPackage.responseStream).toBe(true);
    expect(service.DownloadAgentBundle.responseStream).toBe(true);
  });

  it('matches the committed generated types when regenerated', async () => {
    const out = await mkdtemp(path.join(tmpdir(), 'gantry-proto-gen-'));
    try {
      execFileSync('bash', [path.join(PROTO_ROOT, 'generate.sh'), out]);
      const committed = path.join(PROTO_ROOT, 'gen');
      const files = (await readdir(out, { recursive: true })).filter((f) => f.endsWith('.ts')).sort();
      expect((await readdir(committed, { recursive: true })).filter((f) => f.endsWith('.ts')).sort()).toEqual(files);
      for (const file of files) {
        expect(await readFile(path.join(committed, file), 'utf8'), file).toBe(
          await readFile(path.join(out, file), 'utf8'),
        );
      }
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });
});
