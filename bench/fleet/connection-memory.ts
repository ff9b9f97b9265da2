/**
 * bench/fleet/connection-memory: what one idle agent connection costs a Node.js server by itself,
 * layer by layer, before any of Gantry's code: TCP, TLS, HTTP/2, HTTP/2 over TLS, and grpc-js over
 * TLS with the gateway's server options and one open bidirectional call per connection (as an
 * agent holds its Connect call). bench/fleet's server RSS per agent at 10,000 is this floor plus
 * what the gateway keeps per session; this bench says which part is which.
 *
 *   npx tsx bench/fleet/connection-memory.ts              # N = 2,000 connections per layer
 *   npx tsx bench/fleet/connection-memory.ts --n 5000
 *
 * Per layer: a server process (the gateway's certificate and key, made as the gateway makes them)
 * and client processes (one per 2,500) opening N connections, each sending one message. Measured
 * in the server after a full garbage collection, before and after the N connections: RSS, the V8
 * heap in use, and the rest (RSS − V8 heap: OpenSSL, nghttp2, Node's C++ objects, malloc), per
 * connection.
 * Prints a Markdown table; exits 1 only when a layer's connections do not all arrive.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadAgentTls } from '../../services/core/agent-tls.ts';
import { ACCEPT_BACKLOG, SERVER_CHANNEL_OPTIONS } from '../../services/gateway/gateway.ts';
import { table } from '../deploy/stats.ts';

const LAYERS = ['tcp', 'tls', 'h2', 'h2-tls', 'grpc-tls'] as const;
type Layer = (typeof LAYERS)[number];
const SELF = fileURLToPath(import.meta.url);
const MESSAGE = Buffer.from('hello from an agent');
const CONNECTIONS_PER_CLIENT = 2_500;

interface Material {
  key: string;
  certChain: string;
}
interface Memory {
  rss: number;
  heapUsed: number;
}
type FromServer =
  { type: 'listening'; port: number } | { type: 'heard'; count: number } | ({ type: 'memory' } & Memory);

/** A generic bidirectional method of raw bytes: grpc-js's own framing, no protobuf. */
const CONNECT_METHOD = {
  Connect: {
    path: '/bench.ConnectionMemory/Connect',
    requestStream: true,
    responseStream: true,
    requestSerialize: (bytes: Buffer) => bytes,
    requestDeserialize: (bytes: Buffer) => bytes,
    responseSerialize: (bytes: Buffer) => bytes,
    responseDeserialize: (bytes: Buffer) => bytes,
  },
} satisfies grpc.ServiceDefinition;

// ---- server role -------------------------------------------------------------------------------

async function serve(layer: Layer, material: Material, expected: number): Promise<void> {
  const send = (message: FromServer) => process.send!(message);
  let heard = 0;
  // Every connection's first bytes (or its call's first message) counted, so the parent knows
  // when all N arrived; what is held per connection is what a server holds for an idle agent.
  const onHeard = () => {
    heard++;
    if (heard % 500 === 0 || heard === expected) send({ type: 'heard', count: heard });
  };
  const firstData = (stream: NodeJS.ReadableStream) => {
    stream.once('data', onHeard);
    stream.on('data', () => undefined);
  };
  const tlsOptions = { key: material.key, cert: material.certChain };
  let port: number;
  if (layer === 'grpc-tls') {
    const server = new grpc.Server(SERVER_CHANNEL_OPTIONS);
    server.addService(CONNECT_METHOD, {
      Connect: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        call.once('data', onHeard);
        call.on('error', () => undefined);
      },
    });
    const credentials = grpc.ServerCredentials.createSsl(
      null,
      [{ private_key: Buffer.from(material.key), cert_chain: Buffer.from(material.certChain) }],
      false,
    );
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', credentials, (error, bound) => (error ? reject(error) : resolve(bound))),
    );
  } else {
    const onStream = (stream: http2.ServerHttp2Stream) => {
      stream.respond({ ':status': 200 });
      firstData(stream);
    };
    const server: net.Server =
      layer === 'tcp'
        ? net.createServer(firstData)
        : layer === 'tls'
          ? tls.createServer(tlsOptions, firstData)
          : layer === 'h2'
            ? http2.createServer().on('stream', onStream)
            : http2.createSecureServer({ ...tlsOptions, maxSessionMemory: 16 }).on('stream', onStream);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', ACCEPT_BACKLOG, resolve));
    port = (server.address() as net.AddressInfo).port;
  }
  process.on('message', (message: { type: string }) => {
    if (message.type !== 'measure') return;
    globalThis.gc!();
    const { rss, heapUsed } = process.memoryUsage();
    send({ type: 'memory', rss, heapUsed });
  });
  send({ type: 'listening', port });
}

// ---- client role -------------------------------------------------------------------------------

/** The client's connections, referenced for the process's life. */
const held: unknown[] = [];

async function connect(layer: Layer, port: number, n: number): Promise<void> {
  const ignore = () => undefined;
  const GrpcClient = grpc.makeGenericClientConstructor(CONNECT_METHOD, 'ConnectionMemory');
  for (let i = 0; i < n; i++) {
    switch (layer) {
      case 'tcp': {
        const socket = net.connect(port, '127.0.0.1').on('error', ignore);
        socket.write(MESSAGE);
        held.push(socket);
        break;
      }
      case 'tls': {
        const socket = tls.connect(port, '127.0.0.1', { rejectUnauthorized: false }).on('error', ignore);
        socket.write(MESSAGE);
        held.push(socket);
        break;
      }
      case 'h2':
      case 'h2-tls': {
        const scheme = layer === 'h2' ? 'http' : 'https';
        const session = http2
          .connect(`${scheme}://127.0.0.1:${port}`, { rejectUnauthorized: false })
          .on('error', ignore);
        const stream = session.request({ ':method': 'POST', ':path': '/connect' }).on('error', ignore);
        stream.write(MESSAGE);
        held.push(session, stream);
        break;
      }
      case 'grpc-tls': {
        const client = new GrpcClient(
          `127.0.0.1:${port}`,
          grpc.credentials.createSsl(null, null, null, { rejectUnauthorized: false }),
          // Its own connection each (grpc-js shares one per address otherwise); the certificate's DNS name.
          { 'grpc.use_local_subchannel_pool': 1, 'grpc.ssl_target_name_override': 'localhost' },
        );
        const call = (client as unknown as { Connect(): grpc.ClientDuplexStream<Buffer, Buffer> }).Connect();
        call.on('error', ignore);
        call.write(MESSAGE);
        held.push(client, call);
        break;
      }
    }
    // Batches of 100, so the accept queue never overflows (a storm is bench/fleet's subject).
    if (i % 100 === 99) await new Promise((resolve) => setTimeout(resolve, 30));
  }
  setInterval(() => undefined, 60_000);
}

// ---- parent ------------------------------------------------------------------------------------

function nextMessage<T>(child: ChildProcess, accept: (message: T) => boolean, timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.off('message', onMessage);
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMessage = (message: T) => {
      if (!accept(message)) return;
      clearTimeout(timer);
      child.off('message', onMessage);
      resolve(message);
    };
    child.on('message', onMessage);
  });
}

async function measureLayer(layer: Layer, n: number, materialFile: string) {
  const server = fork(SELF, ['server', layer, materialFile, String(n)], {
    execArgv: ['--expose-gc', '--import', 'tsx'],
  });
  const clients: ChildProcess[] = [];
  try {
    const { port } = await nextMessage<FromServer & { type: 'listening' }>(
      server,
      (m) => m.type === 'listening',
      30_000,
    );
    const measure = async () => {
      const answer = nextMessage<FromServer & { type: 'memory' }>(server, (m) => m.type === 'memory', 30_000);
      server.send({ type: 'measure' });
      return answer;
    };
    const before = await measure();
    let heard = 0;
    server.on('message', (m: FromServer) => {
      if (m.type === 'heard') heard = m.count;
    });
    // One client process per 2,500 connections: a grpc-js channel's handshake costs its client
    // ~10 ms of CPU, and one process opened only ~4,500 in two minutes.
    const processes = Math.ceil(n / CONNECTIONS_PER_CLIENT);
    for (let i = 0; i < processes; i++) {
      const share = Math.floor(n / processes) + (i < n % processes ? 1 : 0);
      clients.push(fork(SELF, ['client', layer, String(port), String(share)], { execArgv: ['--import', 'tsx'] }));
    }
    const deadline = Date.now() + 300_000;
    while (heard < n && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    if (heard < n) throw new Error(`${layer}: ${heard} of ${n} connections arrived within 300 s`);
    // Let handshakes' and first reads' garbage settle before the measurement's full collection.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const after = await measure();
    const perConnectionKiB = (bytes: number) => bytes / n / 1024;
    const rss = perConnectionKiB(after.rss - before.rss);
    const heap = perConnectionKiB(after.heapUsed - before.heapUsed);
    return { layer, rss, heap, rest: rss - heap };
  } finally {
    for (const client of clients) client.kill('SIGKILL');
    server.kill('SIGKILL');
  }
}

const DESCRIPTION: Record<Layer, string> = {
  tcp: 'TCP',
  tls: 'TLS (the gateway’s certificate)',
  h2: 'HTTP/2, one open stream',
  'h2-tls': 'HTTP/2 over TLS, one open stream',
  'grpc-tls': 'grpc-js over TLS (the gateway’s options), one open bidi call',
};

async function main(): Promise<void> {
  const [role, layerArg, third, fourth] = process.argv.slice(2);
  if (role === 'server') {
    return serve(layerArg as Layer, JSON.parse(readFileSync(third!, 'utf8')) as Material, Number(fourth));
  }
  if (role === 'client') return connect(layerArg as Layer, Number(third), Number(fourth));

  const nAt = process.argv.indexOf('--n');
  const n = nAt >= 0 ? Number(process.argv[nAt + 1]) : 2_000;
  if (!(Number.isInteger(n) && n > 0)) throw new Error('--n: a positive whole number of connections');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gantry-connection-memory-'));
  try {
    const material = await loadAgentTls({ dataDir: dir, names: ['127.0.0.1', 'localhost'] });
    const materialFile = path.join(dir, 'material.json');
    writeFileSync(materialFile, JSON.stringify({ key: material.key, certChain: material.certChain }));
    const rows: string[][] = [];
    let failed = false;
    for (const layer of LAYERS) {
      try {
        const result = await measureLayer(layer, n, materialFile);
        console.log(JSON.stringify(result));
        rows.push([DESCRIPTION[layer], result.rss.toFixed(1), result.heap.toFixed(1), result.rest.toFixed(1)]);
      } catch (error) {
        failed = true;
        console.error(String(error));
        rows.push([DESCRIPTION[layer], 'failed', '', '']);
      }
    }
    console.log(`\nbench/fleet/connection-memory: ${n} idle connections per layer, KiB per connection in the server\n`);
    console.log(table(['layer', 'RSS', 'V8 heap in use', 'outside the heap (RSS − heap)'], rows));
    console.log(
      `\nMachine: ${os.cpus().length} cores, Node ${process.version}, load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}.`,
    );
    process.exitCode = failed ? 1 : 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
