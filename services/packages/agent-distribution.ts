/**
 * The agent bundle this control plane hands out (GET /api/agent/install.sh downloads it): the
 * single-file agent and agent.proto in gantry-agent-<version>.tar.gz, as scripts/build-agent.ts
 * writes them with agent-manifest.json beside. Read once at start and kept in memory (a few MiB);
 * its sha256 is checked here and again by the install script on the target.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../core/index.ts';

export interface AgentDistribution {
  /** The agent version inside, e.g. 0.1.0. */
  readonly version: string;
  /** File name, e.g. gantry-agent-0.1.0.tar.gz (also its download path's last part). */
  readonly archiveName: string;
  /** Lowercase hex sha256 of the archive. */
  readonly sha256: string;
  readonly bytes: Buffer;
}

const VERSION = /^[0-9A-Za-z.+-]{1,64}$/;

/** Null (with a warning saying how to fix it) when no bundle was built into `dir`. */
export async function loadAgentDistribution(dir: string, logger: Logger): Promise<AgentDistribution | null> {
  const manifestFile = path.join(dir, 'agent-manifest.json');
  let manifest: { version?: unknown; archive?: unknown; sha256?: unknown };
  try {
    manifest = JSON.parse(await fs.readFile(manifestFile, 'utf8')) as typeof manifest;
  } catch {
    logger.warn(
      { dir },
      'no agent bundle: GET /api/agent/install.sh answers 503 until `npm run build:agent` builds one (npm start does)',
    );
    return null;
  }
  const { version, archive, sha256 } = manifest;
  if (
    typeof version !== 'string' ||
    !VERSION.test(version) ||
    typeof archive !== 'string' ||
    archive !== `gantry-agent-${version}.tar.gz` ||
    typeof sha256 !== 'string'
  ) {
    throw new Error(`${manifestFile} is damaged: run npm run build:agent again`);
  }
  const bytes = await fs.readFile(path.join(dir, archive));
  const actual = createHash('sha256').update(bytes).digest('hex');
  if (actual !== sha256) throw new Error(`${archive} does not match the sha256 in ${manifestFile}: rebuild the agent`);
  return { version, archiveName: archive, sha256, bytes };
}
