// The operator console in a real browser (headless Debian Chromium driven by playwright-core) against
// the real stack (tests/stack/stack.ts: devnet, Postgres, Redis, the controller and a proxy as
// processes), opened at the gateway address (the proxy, which forwards /console and the admin API to
// the controller) as operators reach it; every request the page makes stays on that origin. A wrong
// admin key is refused; log in; create an escrow; chat through the gateway and watch its nonce move on
// the Escrows page without a reload; settle it and see the amount returned, as the chain's settle event
// says, and the Overview's funds history step at each registration and settle; create a key whose
// secret is shown once, rotate it (the proxy then refuses the old secret) and revoke it, and find
// those actions in the audit log. Last, the controller's own /console works too. Each page is
// photographed into tests/console/.screenshots (gitignored), or into CONSOLE_SCREENSHOTS
// (`pnpm console:screenshots` writes docs/console for the README).
import { mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureConsoleBuilt, REPO_ROOT } from '@gonka-gateway/deploy';
import { QWEN_MODEL } from '@gonka-gateway/devnet';
import { redisKeys, writeHostHealth } from '@gonka-gateway/shared';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, adminCall, type Stack, settledEvent, startStack, USER_KEY } from '../stack/stack.js';
import { ensureChromium } from '../support/chromium.js';

/** The page's document, as the callbacks of page.evaluate see it (this file compiles without DOM types). */
declare const document: {
  cookie: string;
  querySelector(selector: string): {
    getAttribute(name: string): string | null;
    textContent: string | null;
    scrollTo(x: number, y: number): void;
  } | null;
};

const browserFound = ensureChromium();
if ('skip' in browserFound) console.warn(`console browser test skipped: ${browserFound.skip}`);
const QUARANTINED = 'gonka1quarantinedhostforconsoletest0000000';
const SHOTS = join(REPO_ROOT, process.env.CONSOLE_SCREENSHOTS ?? 'tests/console/.screenshots');

describe.skipIf('skip' in browserFound)('the operator console in a browser', () => {
  let s: Stack;
  let browser: Browser;
  let page: Page;
  let escrowId: string;
  /** The gateway address the console is opened at: the stack's proxy. */
  let gateway: string;
  /** Every URL the page requested while opened at the gateway. */
  const requested: string[] = [];

  beforeAll(async () => {
    ensureConsoleBuilt();
    mkdirSync(SHOTS, { recursive: true });
    [s, browser] = await Promise.all([
      startStack({ proxies: 1 }),
      chromium.launch({
        executablePath: (browserFound as { path: string }).path,
        headless: true,
        // Root in a container has no user namespace for Chromium's sandbox.
        args: ['--no-sandbox', '--disable-dev-shm-usage'],
      }),
    ]);
    gateway = s.proxyUrls[0];
    page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
    page.setDefaultTimeout(10_000);
    page.on('request', (r) => requested.push(r.url()));
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await s?.close();
  }, 60_000);

  // A failed step leaves its page behind (and says what an open dialog shows), then closes the dialog
  // so the next step starts from the page.
  afterEach(async (test) => {
    if (test.task.result?.state !== 'fail' || !page) return;
    await page.screenshot({ path: join(SHOTS, 'failed.png'), fullPage: true }).catch(() => undefined);
    const dialog = await page
      .locator('.dialog')
      .allTextContents()
      .catch(() => []);
    if (dialog.length) console.error(`open dialog at the failure: ${dialog.join(' | ')}`);
    await page.goto(`${gateway}/console/#/overview`).catch(() => undefined);
  });

  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const open = async (id: string) => {
    await page.click(`nav a[href="#/${id}"]`);
    await page.waitForSelector(`main[data-page="${id}"]`);
  };
  /** Fails if the page holds a secret it must never show. */
  const noSecrets = async () => {
    const html = await page.content();
    expect(html).not.toContain(ADMIN_KEY);
    expect(html).not.toContain(s.creator.key.exportHex());
    expect(html).not.toContain(USER_KEY);
  };

  it('refuses a wrong admin key, then logs in with the right one kept in sessionStorage only', async () => {
    await page.goto(`${gateway}/console`);
    expect(page.url()).toBe(`${gateway}/console/`);
    await page.fill('input[name="admin-key"]', 'sk-admin-not-the-key');
    await page.click('button[type="submit"]');
    await page.getByText('The admin key was refused.').waitFor();
    await shot('login');
    await page.fill('input[name="admin-key"]', ADMIN_KEY);
    await page.click('button[type="submit"]');
    await page.waitForSelector('main[data-page="overview"]');
    expect(await page.evaluate(() => sessionStorage.getItem('gateway-admin-key'))).toBe(ADMIN_KEY);
    expect(await page.evaluate(() => document.cookie)).toBe('');
    expect((await page.context().cookies()).length).toBe(0);
    expect(page.url()).not.toContain(ADMIN_KEY);
    await noSecrets();
  });

  it('creates an escrow, shows its nonce moving as chats are served, settles it and shows the refund', async () => {
    await open('escrows');
    await page.click('text=Create escrow');
    await page.fill('input[name="model"]', QWEN_MODEL);
    await page.fill('input[name="amount"]', '6');
    await page.fill('input[name="private_key_env"]', 'CREATOR_KEY');
    await page.click('button:has-text("Review")');
    await page.locator('.confirm-text', { hasText: 'Lock 6 GNK' }).waitFor();
    await page.click('[data-testid="confirm"]');
    const row = page.locator('tr[data-escrow]');
    await row.first().waitFor({ timeout: 30_000 });
    escrowId = (await row.first().getAttribute('data-escrow'))!;
    // The proxy claims it: its pool entry turns active with an owner.
    await row.locator('td:nth-child(5) .badge-active').waitFor({ timeout: 30_000 });

    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${s.proxyUrls[0]}/v1/chat/completions`, {
        method: 'POST',
        // The model is admin-only until settings open it to API keys (the stack's default).
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: QWEN_MODEL,
          max_tokens: 8,
          messages: [{ role: 'user', content: `hi ${i}` }],
        }),
      });
      expect(res.status, await res.clone().text()).toBe(200);
      await res.text();
    }
    // The page polls: the nonce shows up without a reload.
    await page.waitForFunction(
      () => Number(document.querySelector('td.nonce')?.getAttribute('data-nonce') || '0') > 0,
      undefined,
      { timeout: 15_000 },
    );
    await shot('escrows');
    await noSecrets();
    // The overview while the escrow serves: its funds locked and the traffic the replica measured.
    await open('overview');
    await page.locator('td', { hasText: QWEN_MODEL }).first().waitFor();
    await page.locator('[data-testid="funds-history"] .u-legend').waitFor();
    await open('escrows');

    await row.locator('button:has-text("Settle")').click();
    await page.getByText('returns to the creator').waitFor();
    await page.click('[data-testid="confirm"]');
    const returned = row.locator('td.returned');
    await page.waitForFunction(
      () => (document.querySelector('td.returned')?.textContent ?? '').includes('GNK'),
      undefined,
      { timeout: 45_000 },
    );
    const [tx] = await s.sql<{ tx_hash: string }[]>`
      select tx_hash from chain_tx_commitments where kind = 'settle_escrow' and status = 'included'
       and escrow_id = ${escrowId}::numeric`;
    const event = await settledEvent(s.chain, tx!.tx_hash);
    expect(await returned.getAttribute('title')).toContain(`${event.remainder} ngonka`);
    expect(event.remainder).toBeGreaterThan(0n);
    // The escrow list and the summary are polled apart: the row says settled at its next poll.
    await row.locator('.badge-settled').waitFor();
    await page.evaluate(() => document.querySelector('main')?.scrollTo(0, 0));
    await shot('escrows-settled');
  }, 120_000);

  it('deactivates an escrow, then batch settles the selected escrows with one progress line each', async () => {
    const created = await adminCall(s.controllerUrl, 'POST', '/v1/admin/escrows', {
      amount: '5000000000',
      model_id: QWEN_MODEL,
      chain_id: s.chainId,
      private_key_env: 'CREATOR_KEY',
      register: true,
    });
    expect(created.status, created.text).toBe(200);
    await open('escrows');
    const row = page.locator(`tr[data-escrow="${created.json.escrow_id}"]`);
    await row.waitFor();
    // Deactivated first: routing stops, its funds stay locked until the settle below.
    await row.locator('button:has-text("Deactivate")').click();
    await page.getByText('stays locked until it is settled').waitFor();
    await page.click('[data-testid="confirm"]');
    await row.getByText('not routed').waitFor();
    await row.locator('input[type="checkbox"]').check();
    await page.click('button:has-text("Settle selected (1)")');
    await page.getByText('returns to their creators').waitFor();
    await page.click('[data-testid="confirm"]');
    await expect
      .poll(() => page.locator('[data-testid="batch-summary"]').textContent(), { timeout: 45_000 })
      .toMatch(/^Done: 1 settled/);
    await page
      .locator('.progress li', { hasText: `escrow ${created.json.escrow_id}: settled, returned` })
      .waitFor();
    await shot('escrows-batch-settle');
    await page.click('button:has-text("Close")');
  }, 60_000);

  it('shows the hosts (lifting a quarantine) and rotation pages, and the overview after the settle', async () => {
    await open('overview');
    await page.locator('td', { hasText: 'stack-0' }).first().waitFor();
    await page.getByText('Returned').first().waitFor();
    // Funds over time: two registrations and two settles, each a step, and the point at the read (the
    // Escrows page's last summary, read before the batch settle, may answer first: the next poll has it).
    const history = page.locator(`[data-testid="funds-history"][data-model="${QWEN_MODEL}"]`);
    await expect
      .poll(async () => Number(await history.getAttribute('data-points')), { timeout: 10_000 })
      .toBe(5);
    await page.locator('.chart .u-legend').nth(1).waitFor();
    await shot('overview');
    // A host the proxies quarantined (as host-health.ts records it), for the lift action.
    await writeHostHealth(s.redis.redis, redisKeys(s.redis.prefix), [
      {
        participant: QUARANTINED,
        model: QWEN_MODEL,
        add: { attempts: 6, successes: 2, failures: 4, receipt_timeouts: 4 },
        set: {
          state: 'quarantined',
          quarantinedUntilMs: Date.now() + 10 * 60_000,
          timesQuarantined: 1,
          consecutiveFailures: 4,
          lastError: 'receipt_timeout',
          lastErrorAtMs: Date.now() - 2_000,
          receiptMs: 2_400,
        },
      },
    ]);
    await open('hosts');
    const quarantined = page.locator('tr', { hasText: QUARANTINED });
    await quarantined.locator('.badge-quarantined').waitFor();
    await shot('hosts');
    await quarantined.locator('button:has-text("Lift quarantine")').click();
    await page.click('[data-testid="confirm"]');
    await quarantined.locator('.badge-healthy').waitFor();
    await open('rotation');
    await page.getByText('Blocks to next rotation').waitFor();
    await shot('rotation');
    await noSecrets();
  });

  it('creates a key whose secret is shown once, rotates it (the proxy refuses the old secret), revokes it, and exports usage as CSV', async () => {
    await open('keys');
    await page.click('text=Create key');
    await page.fill('input[name="name"]', 'console-key');
    await page.fill('input[name="budget"]', '1.5');
    await page.click('button:has-text("Create key") >> nth=-1');
    const secret = await page.locator('[data-testid="secret"]').inputValue();
    expect(secret).toMatch(/^sk-[0-9a-f]{48}$/);
    await page.click('text=I stored it');
    const keyRow = page.locator('tr[data-key="console-key"]');
    await keyRow.waitFor();
    expect(await page.content()).not.toContain(secret);
    // The proxy's answer to a secret: 200 while it is the key's, 401 once it is not.
    const models = async (key: string) =>
      (await fetch(`${gateway}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status;
    expect(await models(secret)).toBe(200);
    // Rotate: a new secret shown once; the proxy refuses the old one from then on.
    await keyRow.locator('button:has-text("Rotate")').click();
    await page.click('[data-testid="confirm"]');
    const rotated = await page.locator('[data-testid="secret"]').inputValue();
    expect(rotated).toMatch(/^sk-[0-9a-f]{48}$/);
    expect(rotated).not.toBe(secret);
    await page.click('text=I stored it');
    expect(await page.content()).not.toContain(rotated);
    await expect.poll(() => models(secret), { interval: 100 }).toBe(401);
    expect(await models(rotated)).toBe(200);
    await keyRow.locator('button:has-text("Revoke")').click();
    await page.click('[data-testid="confirm"]');
    await keyRow.locator('.badge-revoked').waitFor();
    expect(await page.content()).not.toContain(secret);
    await page.locator('.chart .u-legend').first().waitFor();
    await shot('keys');
    // The usage records as CSV: fetched with the admin key, handed to the browser as a download.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.click('button:has-text("Export records (CSV)")'),
    ]);
    expect(download.suggestedFilename()).toBe('usage-records.csv');
    const csv = (await readFile(await download.path(), 'utf8')).trim().split('\n');
    expect(csv[0]).toMatch(/^request_id,at,key/);
    expect(csv.length).toBeGreaterThan(3); // the chats of the escrow test

    const audit = await adminCall(s.controllerUrl, 'GET', '/v1/admin/audit?limit=100');
    const actions = (audit.json.data as { action: string; status_code: number }[]).map(
      (r) => `${r.action} ${r.status_code}`,
    );
    expect(actions).toContain('POST /v1/admin/keys/:id/revoke 200');
    expect(actions).toContain('POST /v1/admin/keys/:id/rotate 200');
    expect(actions).toContain('POST /v1/admin/keys 201');
    expect(actions).toContain('POST /v1/admin/devshards/:id/settle 202');
    expect(actions).toContain('POST /v1/admin/hosts/:id/lift 200');
    expect(actions).toContain('POST /v1/admin/escrows 200');
    expect(actions).toContain('POST /v1/admin/devshards/:id/deactivate 200');
    expect(actions).toContain('POST /v1/admin/devshards/settle 200');
    expect(JSON.stringify(audit.json)).not.toContain(secret);
    expect(JSON.stringify(audit.json)).not.toContain(rotated);
  });

  it('shows the settings API’s validation error on the form', async () => {
    await open('settings');
    await page.check('input[name="disabled_enabled"]');
    await page.fill('input[name="disabled_new_url"]', '');
    await page.click('button:has-text("Save settings")');
    await expect.poll(() => page.locator('[data-testid="settings-error"]').textContent()).toMatch(/new_url/);
    await shot('settings');
    await page.click('button:has-text("Reset")');
    const settings = await adminCall(s.controllerUrl, 'GET', '/v1/admin/settings');
    expect(settings.json.disabled.enabled).toBe(false);
  });

  it('made every request at the gateway origin; the controller’s own /console works too', async () => {
    // Relative URLs only: opened at the proxy, nothing went to another origin.
    expect(requested.length).toBeGreaterThan(10);
    expect(requested.filter((u) => new URL(u).origin !== gateway)).toEqual([]);
    expect(requested.some((u) => u.startsWith(`${gateway}/v1/admin/summary`))).toBe(true);
    // The controller's address is another origin: its tab has its own sessionStorage, so a new login.
    const direct = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    try {
      await direct.goto(`${s.controllerUrl}/console`);
      await direct.fill('input[name="admin-key"]', ADMIN_KEY);
      await direct.click('button[type="submit"]');
      await direct.locator('[data-testid="funds-history"] .u-legend').waitFor();
    } finally {
      await direct.close();
    }
  });
});
