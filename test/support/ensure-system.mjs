// Checks the system tools the end-to-end tests drive (stock adb, Debian Chromium, the
// PostgreSQL server the multi-node tests start their own cluster with, ffmpeg and ffprobe
// that check the videos phonelease writes) and
// installs them when this runs as root on Debian; otherwise says exactly what is missing.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';

/** Whether some PostgreSQL version's server binaries are installed where Debian puts them. */
const hasPostgres = () => {
  try {
    return readdirSync('/usr/lib/postgresql').some((v) => existsSync(`/usr/lib/postgresql/${v}/bin/initdb`));
  } catch {
    return false;
  }
};

const wanted = [
  { pkg: 'adb', path: '/usr/bin/adb', why: 'stock adb client for the ADB and Appium tests' },
  { pkg: 'chromium', path: '/usr/bin/chromium', why: 'Chromium for the viewer and report tests' },
  { pkg: 'ffmpeg', path: '/usr/bin/ffprobe', why: 'ffprobe and ffmpeg to check the recorded videos' },
  {
    pkg: 'postgresql',
    path: '/usr/lib/postgresql/VERSION/bin/initdb',
    present: hasPostgres,
    why: 'PostgreSQL server binaries for the API node and device host tests',
  },
];
const missing = wanted.filter((w) => !(w.present ? w.present() : existsSync(w.path)));
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
