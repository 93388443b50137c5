// Checks the system tools the end-to-end tests drive (stock adb, Debian Chromium) and
// installs them when this runs as root on Debian; otherwise says exactly what is missing.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const wanted = [
  { pkg: 'adb', path: '/usr/bin/adb', why: 'stock adb client for the ADB and Appium tests' },
  { pkg: 'chromium', path: '/usr/bin/chromium', why: 'Chromium for the viewer and report tests' },
];
const missing = wanted.filter((w) => !existsSync(w.path));
if (missing.length > 0) {
  const names = missing.map((m) => m.pkg).join(' ');
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const hasApt = spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status === 0;
  if (isRoot && hasApt) {
    console.error(`phonelease tests: installing Debian packages: ${names}`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    execFileSync(
      'apt-get',
      ['install', '-y', '-qq', '--no-install-recommends', ...missing.map((m) => m.pkg)],
      {
        stdio: 'inherit',
        env,
      },
    );
  } else {
    for (const m of missing) console.error(`missing ${m.path} (${m.why})`);
    console.error(`Install them with: sudo apt-get install -y ${names}`);
    process.exit(1);
  }
}
