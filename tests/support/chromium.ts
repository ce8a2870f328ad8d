// A Chromium for the browser tests: Debian's package (playwright-core drives any recent Chromium
// over CDP and downloads no browser of its own). Missing, it is installed with apt-get as root, the
// way ./start installs haproxy (deploy/src/load-balancer.ts ensureHaproxy); only when that is
// impossible (not root, no apt-get, no network) do the browser tests skip, saying why.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/snap/bin/chromium'];

export function findChromium(): string | undefined {
  const chosen = process.env.CHROMIUM_PATH;
  if (chosen) return existsSync(chosen) ? chosen : undefined;
  return CANDIDATES.find((p) => existsSync(p));
}

/** The Chromium path, installing Debian's package if needed; or why there is none. */
export function ensureChromium(): { path: string } | { skip: string } {
  const found = findChromium();
  if (found) return { path: found };
  if (process.getuid?.() !== 0)
    return { skip: 'chromium is not installed and this user cannot apt-get install it' };
  try {
    execFileSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' });
  } catch {
    return { skip: 'chromium is not installed and there is no apt-get to install it' };
  }
  const install = () =>
    execFileSync('apt-get', ['install', '-y', '-q', '--no-install-recommends', 'chromium'], {
      stdio: 'ignore',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      timeout: 300_000,
    });
  try {
    try {
      install();
    } catch {
      // A fresh machine may have no package lists yet.
      execFileSync('apt-get', ['update', '-q'], { stdio: 'ignore', timeout: 300_000 });
      install();
    }
  } catch (err) {
    return {
      skip: `chromium is not installed and apt-get install -y chromium failed: ${(err as Error).message}`,
    };
  }
  const installed = findChromium();
  return installed
    ? { path: installed }
    : { skip: 'apt-get installed chromium but no chromium binary was found' };
}
