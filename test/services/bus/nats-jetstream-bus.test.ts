/**
 * Runs the Bus contract against NATS JetStream (127.0.0.1:4222, or NATS_URL), plus what only this
 * adapter does: refuse a server without JetStream and keep the 2.9 WorkQueue stream empty.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { connect as connectTcp } from 'node:net';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { NatsJetStreamBus, NatsWithoutJetStreamError, createBus, workStreamName } from '../../../services/bus/index.ts';
import { CONTRACT_TUNING, capturingLogger, describeBusContract } from './bus.contract.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { freePort } from '../../../services/core/index.ts';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const uniquePrefix = () => `t_${randomBytes(4).toString('hex')}`;

async function streamMessages(prefix: string): Promise<number> {
  const nc = await connect({ servers: NATS_URL });
  try {
    const jsm = await jetstreamManager(nc);
    return (await jsm.streams.info(workStreamName(prefix))).state.messages;
  } finally {
    await nc.close();
  }
}

async function deleteStream(prefix: string): Promise<void> {
  const nc = await connect({ servers: NATS_URL });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(workStreamName(prefix)).catch(() => false);
  } finally {
    await nc.close();
  }
}

describeBusContract({
  name: 'nats-jetstream',
  async open(options) {
    const prefix = uniquePrefix();
    return {
      connect: () => NatsJetStreamBus.connect({ ...options, url: NATS_URL, prefix }),
      cleanup: () => deleteStream(prefix),
    };
  },
});

describe('NatsJetStreamBus', () => {
  it('leaves no message in the work stream after acks and after exhausted leases', async () => {
    const prefix = uniquePrefix();
    const { logger, lines } = capturingLogger();
    const bus = await NatsJetStreamBus.connect({ ...CONTRACT_TUNING, maxDeliver: 2, url: NATS_URL, prefix, logger });
    try {
      const seen: string[] = [];
      await bus.consumeWork(
        'deployments',
        async (message) => {
          seen.push(message.deploymentId);
          // 'stuck' never answers, so only lease expiry (ackWait, then the backoff) ends it.
          if (message.deploymentId === 'stuck') await new Promise(() => {});
          return 'ack';
        },
        { maxInFlight: 3 },
      );
      await bus.publishWork('deployments', { v: 1, type: 'deployment.advance', deploymentId: 'done' });
      await bus.publishWork('deployments', { v: 1, type: 'deployment.advance', deploymentId: 'stuck' });
      await waitFor(() => lines.some((l) => l.msg === 'work message dropped after max deliveries'), {
        timeoutMs: 10_000,
        description: 'the exhausted message to be removed',
      });
      await waitFor(async () => (await streamMessages(prefix)) === 0, { description: 'an empty stream' });
      expect(seen.filter((id) => id === 'stuck')).toHaveLength(2);
      expect(seen.filter((id) => id === 'done')).toHaveLength(1);
    } finally {
      await bus.close();
      await deleteStream(prefix);
    }
  });

  it('is chosen by createBus when a NATS URL is configured', async () => {
    const prefix = uniquePrefix();
    const bus = await createBus({ natsUrl: NATS_URL, prefix, logger: capturingLogger().logger });
    try {
      expect(bus).toBeInstanceOf(NatsJetStreamBus);
      expect(await streamMessages(prefix)).toBe(0);
    } finally {
      await bus.close();
      await deleteStream(prefix);
    }
  });

  it('fails with NatsWithoutJetStreamError when the server runs without JetStream', async () => {
    const port = await freePort();
    const server = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
    try {
      await waitFor(() => canConnect(port), { description: 'the plain nats-server' });
      const attempt = NatsJetStreamBus.connect({ url: `nats://127.0.0.1:${port}`, logger: capturingLogger().logger });
      await expect(attempt).rejects.toBeInstanceOf(NatsWithoutJetStreamError);
      await expect(attempt).rejects.toThrow('start nats-server with -js');
    } finally {
      server.kill('SIGTERM');
    }
  });
});

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connectTcp(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}
