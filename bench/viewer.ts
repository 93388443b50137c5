/**
 * Live viewer frame rate: frames pushed per second to an owner viewer while the phone's
 * screen changes continuously (text typed into the login app 25 times a second through the
 * same stream), against the baseline of how many changes were made. Also the capture time
 * of one frame, which bounds the rate.
 *
 * Goal: >= 5 frames per second while the screen changes.
 * Run: npx tsx bench/viewer.ts [--seconds 5]
 */
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { createPhoneUi } from '../server/devices/virtual/ui/index.js';
import { startServer } from '../server/main.js';
import { Api } from '../test/support/server.js';
import { DEVICE } from '../server/devices/virtual/identity.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' } } });
const seconds = Number(values.seconds);

/** Render time of a changed login screen, straight from the phone's UI (no HTTP, no stream). */
function renderTimes(): { p50: number; p95: number } {
  const ui = createPhoneUi(
    {
      launcherApps: () => [
        { package: 'com.phonelease.login', label: 'Login', activity: 'com.phonelease.login.LoginActivity' },
      ],
      log: () => undefined,
      setting: () => null,
    },
    {
      width: 720,
      height: 1280,
      density: 320,
      identity: DEVICE,
    },
  );
  ui.launch('com.phonelease.login');
  ui.tap(360, 490);
  const times: number[] = [];
  for (let i = 0; i < 40; i++) {
    ui.text('a');
    const t0 = performance.now();
    ui.renderPng();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { p50: times[20]!, p95: times[38]! };
}

const server = await startServer({ bootMs: 0, log: 'warn' });
try {
  const { key } = server.createAccount({ billingMode: 'disabled' });
  const api = new Api(server.url, key);
  const s = (await api.post('/sessions', { body: { timeout_seconds: 600 } })).body;
  await api.waitFor(s.id, ['ready']);

  const { url } = (await api.get(`/sessions/${s.id}/owner-viewer`)).body;
  const ws = new WebSocket(url.replace(/^http/, 'ws') + '/stream');
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  let frames = 0;
  let bytes = 0;
  ws.on('message', (data, binary) => {
    if (binary) {
      frames++;
      bytes += (data as Buffer).length;
    }
  });
  // Open the login app and focus the username field (phone pixels of the built-in layout).
  ws.send(JSON.stringify({ type: 'tap', x: 274, y: 360 }));
  await new Promise((r) => setTimeout(r, 300));
  ws.send(JSON.stringify({ type: 'tap', x: 360, y: 490 }));
  await new Promise((r) => setTimeout(r, 300));

  frames = 0;
  bytes = 0;
  let changes = 0;
  const typer = setInterval(() => {
    ws.send(JSON.stringify(changes % 20 === 19 ? { type: 'key', key: 'del' } : { type: 'text', text: 'a' }));
    changes++;
  }, 40);
  const started = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  clearInterval(typer);
  const elapsed = (performance.now() - started) / 1000;
  ws.close();

  const fps = frames / elapsed;
  const changeRate = changes / elapsed;
  console.log(`phonelease viewer benchmark: ${seconds} s of continuous screen changes`);
  console.log(`screen changes made (baseline): ${changeRate.toFixed(1)}/s`);
  console.log(
    `frames pushed to the viewer:    ${fps.toFixed(1)}/s  (${(bytes / frames / 1024).toFixed(0)} KiB per frame)`,
  );
  console.log(`  ratio to changes:             ${(fps / changeRate).toFixed(2)}`);
  console.log(`  goal >= 5 frames/s:           ${fps >= 5 ? 'met' : 'NOT MET'}`);
  const render = renderTimes();
  console.log(
    `one frame render (PNG encode):  p50 ${render.p50.toFixed(1)} ms, p95 ${render.p95.toFixed(1)} ms -> at most ${(1000 / render.p50).toFixed(0)} frames/s`,
  );
} finally {
  await server.close();
}
