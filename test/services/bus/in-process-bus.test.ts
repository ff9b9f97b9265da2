/** Runs the Bus contract against the in-process adapter (the embedded default). */
import { randomBytes } from 'node:crypto';
import { InProcessBroker, InProcessBus } from '../../../services/bus/index.ts';
import { describeBusContract } from './bus.contract.ts';

// One broker for the whole file, as one process would have; prefixes keep the tests apart.
const broker = new InProcessBroker();

describeBusContract({
  name: 'in-process',
  async open(options) {
    const prefix = `t_${randomBytes(4).toString('hex')}`;
    return {
      connect: async () => new InProcessBus({ ...options, prefix, broker }),
      cleanup: async () => {},
    };
  },
});
