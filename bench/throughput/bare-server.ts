/**
 * The reference of bench/throughput's read test: a bare Fastify route (no auth, no database)
 * answering GET /api/deployment with the JSON the bench captured from Gantry, serialized per
 * request as Gantry serializes it. Argument: the JSON file. Prints its port on stdout.
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const body = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as unknown;
const app = Fastify({ logger: false });
app.get('/api/deployment', async () => body);
const address = await app.listen({ host: '127.0.0.1', port: 0 });
console.log(new URL(address).port);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
