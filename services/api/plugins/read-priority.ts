/**
 * Reads yield to changes when the server is saturated (issue #20): at most READS_PER_TURN reads
 * (GET, HEAD) begin per turn of the event loop; changes (POST, PUT, DELETE) begin at once, and so
 * do the agents' gRPC traffic and the engine, which never pass through here.
 *
 * Why: one turn of the loop handles everything that became ready since the last. Fifty
 * dashboards or scripts polling in a closed loop fill each turn with fifty reads, and a
 * pipeline's `POST /api/release` waits one such turn for each of its round trips to PostgreSQL
 * (four). Admitting the polls a few per turn keeps turns short, so a change's steps follow each
 * other quickly while the polls still all progress, in arrival order (none waits for more turns
 * than there are reads ahead of it). The same idea as Kubernetes' API Priority and Fairness,
 * in its simplest form. Below the limit nothing changes: a read begins at once, as before.
 *
 * Measured with bench/throughput on a 2-core VM (three interleaved pairs, 20 s each): release
 * creates p50 66–80 against 117–136 ms, deployments per minute 817–1,064 against 583–641, while
 * the pollers' own reads during the deployments fell from 878–1,061 to 353–467 a second (reads
 * alone are as fast as before, 0.92–0.98 of a bare Fastify route); the creates' p99 moved within
 * that VM's noise. 4 per turn changed little more for the creates and halved the reads again; 16
 * and 32 gave most of the gain back. The full A/B is in bench/README.md (thirtieth session).
 */
import type { FastifyInstance } from 'fastify';

export const READS_PER_TURN = 8;

const READ_METHODS = new Set(['GET', 'HEAD']);

export function registerReadPriority(app: FastifyInstance, readsPerTurn = READS_PER_TURN): void {
  /** Reads not yet begun, oldest first from `head` (a queue without a shift per read). */
  const waiting: Array<() => void> = [];
  let head = 0;
  /** Reads begun since the last turn's check phase: the first few of a turn begin at once. */
  let begunThisTurn = 0;
  let scheduled = false;
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(nextTurn);
  };
  const nextTurn = () => {
    scheduled = false;
    const until = Math.min(waiting.length, head + readsPerTurn);
    const batch = waiting.slice(head, until);
    head = until;
    if (head === waiting.length) {
      waiting.length = 0;
      head = 0;
    } else if (head >= 1024) {
      waiting.splice(0, head);
      head = 0;
    }
    // The reads begun now count against the turn that follows; the next check phase resets it.
    begunThisTurn = batch.length;
    if (begunThisTurn > 0) schedule();
    for (const begin of batch) begin();
  };
  app.addHook('onRequest', (request, _reply, done) => {
    if (!READ_METHODS.has(request.method)) return done();
    // Not saturated: nothing waits and this turn has room, so the read begins as it always did.
    if (head === waiting.length && begunThisTurn < readsPerTurn) {
      begunThisTurn++;
      schedule();
      return done();
    }
    waiting.push(done);
    schedule();
  });
}
