import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { registerReadPriority } from '../../../services/api/plugins/read-priority.ts';

// The gate alone on a bare Fastify: which handler begins when, counted in turns of the event loop.
let app: FastifyInstance;
afterEach(async () => {
  await app.close();
});

async function appWithGate(readsPerTurn: number) {
  app = Fastify();
  registerReadPriority(app, readsPerTurn);
  let turn = 0;
  let ticking = true;
  const tick = () => {
    turn++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const began: Array<{ name: string; turn: number }> = [];
  app.get('/read/:n', async (request) => {
    const name = `read ${(request.params as { n: string }).n}`;
    began.push({ name, turn });
    return { name };
  });
  app.post('/change', async () => {
    began.push({ name: 'change', turn });
    return { name: 'change' };
  });
  await app.ready();
  return { began, stop: () => (ticking = false) };
}

describe('reads yield to changes (read-priority)', () => {
  it('begins a change before reads that arrived first once a turn is full, and the reads a few per turn, in order', async () => {
    const { began, stop } = await appWithGate(2);
    const answers = await Promise.all([
      ...[1, 2, 3, 4, 5, 6].map((n) => app.inject({ method: 'GET', url: `/read/${n}` })),
      app.inject({ method: 'POST', url: '/change' }),
    ]);
    stop();
    // Every request answered, the reads too: none starves.
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 200, 200, 200]);
    // The first two reads of the turn begin at once, as without the gate; the change overtakes the rest.
    expect(began.map((b) => b.name)).toEqual(['read 1', 'read 2', 'change', 'read 3', 'read 4', 'read 5', 'read 6']);
    const turnsOfReads = began.filter((b) => b.name.startsWith('read')).map((b) => b.turn);
    // Two per turn: three turns, each later than the one before.
    expect(new Set(turnsOfReads).size).toBe(3);
    expect(turnsOfReads[0]).toBe(turnsOfReads[1]);
    expect(turnsOfReads[2]).toBeGreaterThan(turnsOfReads[1]!);
    expect(turnsOfReads[4]).toBeGreaterThan(turnsOfReads[3]!);
  });

  it('gates HEAD like GET and answers reads that arrive while others still wait', async () => {
    const { began, stop } = await appWithGate(1);
    const first = [1, 2, 3].map((n) => app.inject({ method: 'HEAD', url: `/read/${n}` }));
    await new Promise((resolve) => setImmediate(resolve));
    const later = app.inject({ method: 'GET', url: '/read/4' });
    const answers = await Promise.all([...first, later]);
    stop();
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200]);
    expect(began.map((b) => b.name)).toEqual(['read 1', 'read 2', 'read 3', 'read 4']);
    expect(new Set(began.map((b) => b.turn)).size).toBe(4);
  });

  it('keeps arrival order across a long queue (the queue is compacted as it drains)', async () => {
    const { began, stop } = await appWithGate(300);
    const count = 1_700;
    const answers = await Promise.all(
      Array.from({ length: count }, (_, i) => app.inject({ method: 'GET', url: `/read/${i}` })),
    );
    stop();
    expect(answers.every((a) => a.statusCode === 200)).toBe(true);
    expect(began.map((b) => b.name)).toEqual(Array.from({ length: count }, (_, i) => `read ${i}`));
    expect(new Set(began.map((b) => b.turn)).size).toBe(Math.ceil(count / 300));
  });
});
