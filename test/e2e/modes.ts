/**
 * The two layouts every end-to-end suite runs on: the embedded default (embedded PostgreSQL,
 * in-process bus) and the clustered one (the real PostgreSQL and NATS JetStream, a fresh database
 * and bus prefix per suite). Pass `options()` to startControlPlane.
 */
import { randomBytes } from 'node:crypto';
import { createTestDatabase } from '../helpers/database.ts';

export interface E2eMode {
  name: string;
  options(): Promise<{ databaseUrl?: string; natsUrl?: string; natsPrefix?: string }>;
}

export const E2E_MODES: readonly E2eMode[] = [
  { name: 'embedded PostgreSQL + in-process bus', options: async () => ({}) },
  {
    name: 'PostgreSQL + NATS JetStream',
    options: async () => ({
      databaseUrl: (await createTestDatabase()).url,
      natsUrl: 'nats://127.0.0.1:4222',
      natsPrefix: `e2e_${randomBytes(4).toString('hex')}`,
    }),
  },
];
