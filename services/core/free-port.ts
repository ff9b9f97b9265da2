// A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it; it may be taken again
// before the caller binds it, which is fine for local servers started right after).
import net from 'node:net';

/**
 * `except`: ports already picked for servers not started yet. Asked one after another, the OS
 * may hand out the same free port twice (a CI run: metrics and HTTP on one port).
 */
export async function freePort(except: readonly number[] = []): Promise<number> {
  for (;;) {
    const port = await anyFreePort();
    if (!except.includes(port)) return port;
  }
}

function anyFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}
