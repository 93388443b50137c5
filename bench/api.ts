/**
 * API throughput: GET /sessions/{sid} and POST /sessions (fresh idempotency keys, virtual
 * phones with --boot-ms 0 and ample capacity) against the real server in its own process,
 * and the ratio of GET to a bare fastify route returning the same JSON, measured in the
 * same run with the same load generator.
 *
 * Goals on a 2-core machine: GET >= 5,000/s and >= 0.5 of the bare route; POST >= 500/s.
 * Run: npm run build && npx tsx bench/api.ts [--seconds 5] [--concurrency 32]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { load, type LoadResult } from './support/load.js';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '5' }, concurrency: { type: 'string', default: '32' } },
});
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const cli = fileURLToPath(new URL('../dist/src/cli/main.js', import.meta.url));
const children: ChildProcess[] = [];

function startJsonProcess(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ url: string; child: ChildProcess }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n'))
        resolve({ url: (JSON.parse(out.split('\n')[0]!) as { url: string }).url, child });
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}`)));
  });
}

async function runCli(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`phonelease ${args[0]} exited ${code}`)),
    );
  });
}

const fmt = (r: LoadResult) =>
  `${Math.round(r.perSecond).toLocaleString('en-US')}/s (${r.requests} requests in ${r.seconds.toFixed(1)} s, ${r.errors} errors, statuses ${JSON.stringify(r.statuses)})`;

const data = mkdtempSync(join(tmpdir(), 'phonelease-bench-'));
try {
  const server = await startJsonProcess(
    [
      cli,
      'server',
      '--port',
      '0',
      '--json',
      '--data',
      data,
      '--boot-ms',
      '0',
      '--phones',
      '1000000',
      '--boot-slots',
      '64',
    ],
    {
      PHONELEASE_LOG_LEVEL: 'warn',
    },
  );
  const account = JSON.parse(
    await runCli([
      'accounts',
      'create',
      '--data',
      data,
      '--json',
      '--billing-mode',
      'disabled',
      '--session-limit',
      '1000000',
    ]),
  ) as {
    key: string;
  };
  const auth = { authorization: `Bearer ${account.key}` };

  const created = await request(`${server.url}/sessions`, { method: 'POST', headers: auth });
  const session = (await created.body.json()) as { id: string; state: string };
  let view: Record<string, unknown> = {};
  for (let i = 0; i < 200; i++) {
    const r = await request(`${server.url}/sessions/${session.id}`, { headers: auth });
    view = (await r.body.json()) as Record<string, unknown>;
    if (view.state === 'ready') break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const bare = await startJsonProcess(
    ['--import', 'tsx', fileURLToPath(new URL('./support/bare-server.ts', import.meta.url))],
    {
      BARE_BODY: JSON.stringify(view),
    },
  );

  console.log(
    `phonelease API benchmark: ${seconds} s per run, ${concurrency} connections, load generator in its own process`,
  );
  const bareGet = await load(bare.url, () => ({ method: 'GET', path: `/sessions/${session.id}` }), {
    seconds,
    concurrency,
  });
  const get = await load(
    server.url,
    () => ({ method: 'GET', path: `/sessions/${session.id}`, headers: auth }),
    { seconds, concurrency },
  );
  const runId = Date.now().toString(36);
  const post = await load(
    server.url,
    (i) => ({
      method: 'POST',
      path: '/sessions',
      headers: { ...auth, 'idempotency-key': `bench-${runId}-${i}-xxxxxxxx` },
    }),
    { seconds, concurrency },
  );

  const ratio = get.perSecond / bareGet.perSecond;
  console.log(`bare fastify route (baseline): ${fmt(bareGet)}`);
  console.log(`GET /sessions/{sid}:           ${fmt(get)}`);
  console.log(
    `  ratio to baseline:           ${ratio.toFixed(2)}  (goal >= 0.50)  ${ratio >= 0.5 ? 'met' : 'NOT MET'}`,
  );
  console.log(`  goal >= 5,000/s:             ${get.perSecond >= 5000 ? 'met' : 'NOT MET'}`);
  console.log(`POST /sessions (fresh keys):   ${fmt(post)}`);
  console.log(`  ratio to baseline:           ${(post.perSecond / bareGet.perSecond).toFixed(2)}`);
  console.log(`  goal >= 500/s:               ${post.perSecond >= 500 ? 'met' : 'NOT MET'}`);
} finally {
  for (const c of children) c.kill('SIGKILL');
  rmSync(data, { recursive: true, force: true });
}
