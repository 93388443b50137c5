/**
 * The baseline for bench/api.ts: a bare fastify route that returns a fixed JSON body, no
 * auth, no store, no runtime. Prints {"url"} once it listens, like the real server.
 */
import Fastify from 'fastify';

const body = JSON.parse(process.env.BARE_BODY ?? '{}') as unknown;
const app = Fastify({ logger: false });
app.get('/sessions/:sid', async () => body);
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
if (address && typeof address === 'object')
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${address.port}` }) + '\n');
