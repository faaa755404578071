// The dashboard as an operator uses it, in Debian's headless Chromium:
// sign in, find the failed event on the overview, open it, replay it, and
// see it delivered; then pause the target from its endpoint's page and
// resume it. Every page is checked with axe-core (serious and
// critical violations fail), and a page that breaks its own CSP fails too.
// Screenshots of the overview and the event page go to $ARTIFACTS.
//
// Run by crates/hookinbox/tests/browser.rs, which starts `hookinbox serve`
// with a failing target, fails one event, and fixes the target before this
// script replays it. Environment: DASHBOARD_URL, ADMIN_TOKEN, EVENT_ID (the
// provider's event id), ARTIFACTS, CHROMIUM.

import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { chromium } from 'playwright-core';

const require = createRequire(import.meta.url);
const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

const need = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const base = need('DASHBOARD_URL');
const token = need('ADMIN_TOKEN');
const eventId = need('EVENT_ID');
const artifacts = need('ARTIFACTS');
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
mkdirSync(artifacts, { recursive: true });

const failures = [];
const checked = [];

/** axe-core on the page as it is now: serious and critical violations fail. */
async function accessible(page, name) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () =>
    // eslint-disable-next-line no-undef
    axe.run(document, { resultTypes: ['violations'] }),
  );
  const bad = result.violations.filter((v) => ['serious', 'critical'].includes(v.impact));
  for (const v of bad) {
    failures.push(`${name}: ${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }
  checked.push(`${name}: ${result.violations.length} violation(s), ${bad.length} serious or critical`);
}

/** Reloads until `check` holds, at most `ms`. */
async function until(page, check, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await page.waitForTimeout(250);
    await page.reload();
  }
}

const userDataDir = mkdtempSync(join(tmpdir(), 'hookinbox-chromium-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath,
  headless: true,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
  viewport: { width: 1280, height: 900 },
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (message) => {
    if (message.type() === 'error') failures.push(`console error on ${page.url()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => failures.push(`page error on ${page.url()}: ${error}`));

  // Signed out: the dashboard sends the browser to the sign-in form.
  await page.goto(`${base}/ui`);
  if (!page.url().endsWith('/ui/login')) throw new Error(`not sent to sign in: ${page.url()}`);
  await accessible(page, 'sign-in');
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${base}/ui`);

  // The overview lists the failed event.
  const failedLink = page.getByRole('link', { name: eventId });
  if ((await failedLink.count()) !== 1) throw new Error(`no link to ${eventId} on the overview`);
  await page.screenshot({ path: join(artifacts, 'overview.png'), fullPage: true });
  await accessible(page, 'overview');

  // The event: FAILED, its dead delivery and the attempts.
  await failedLink.click();
  await page.waitForURL(/\/ui\/events\/[0-9a-f-]+$/);
  const eventUrl = page.url();
  if (!(await page.getByText('FAILED').first().isVisible())) throw new Error('the event is not FAILED');
  await page.screenshot({ path: join(artifacts, 'event-failed.png'), fullPage: true });
  await accessible(page, 'event (failed)');

  // Replay, through the confirmation step.
  await page.getByRole('link', { name: 'Replay…' }).click();
  await page.waitForURL(`${eventUrl}/replay`);
  await accessible(page, 'replay confirmation');
  await page.getByRole('button', { name: 'Replay this event' }).click();
  await page.waitForURL(`${eventUrl}?replayed=1`);

  // Delivered: the event PROCESSED, generation 1 DELIVERED.
  await until(
    page,
    async () =>
      (await page.locator('dl.fields .status').first().textContent()) === 'PROCESSED' &&
      (await page.locator('caption', { hasText: 'generation 1' }).locator('.status').first().textContent()) ===
        'DELIVERED',
    20000,
    'the replay to be delivered',
  );
  await page.screenshot({ path: join(artifacts, 'event.png'), fullPage: true });
  await accessible(page, 'event (delivered)');

  // The other pages, for accessibility.
  for (const [name, path] of [
    ['events', '/ui/events'],
    ['events filtered', '/ui/events?status=processed&endpoint=lab'],
    ['bulk replay confirmation', '/ui/replay?status=processed'],
    ['endpoints', '/ui/endpoints'],
    ['endpoint', '/ui/endpoints/lab'],
  ]) {
    await page.goto(`${base}${path}`);
    await accessible(page, name);
  }

  // Pause the target from its endpoint's page, then resume it: the state
  // shown is read back from the database after each.
  await page.goto(`${base}/ui/endpoints/lab`);
  const sinkRow = page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'sink', exact: true }) });
  const stateOf = async () => (await sinkRow.locator('.status').first().textContent())?.trim();
  if ((await stateOf()) !== 'closed') throw new Error(`sink is ${await stateOf()}, not closed`);
  await sinkRow.getByRole('button', { name: 'Pause' }).click();
  await page.waitForURL(`${base}/ui/endpoints/lab?paused=sink`);
  if ((await stateOf()) !== 'paused') throw new Error(`sink is ${await stateOf()} after Pause`);
  if (!(await page.getByRole('status').filter({ hasText: 'Paused sink' }).isVisible())) {
    throw new Error('no notice of the pause');
  }
  await page.screenshot({ path: join(artifacts, 'endpoint-paused.png'), fullPage: true });
  await accessible(page, 'endpoint (target paused)');
  await sinkRow.getByRole('button', { name: 'Resume' }).click();
  await page.waitForURL(`${base}/ui/endpoints/lab?resumed=sink`);
  if ((await stateOf()) !== 'closed') throw new Error(`sink is ${await stateOf()} after Resume`);
  await accessible(page, 'endpoint (target resumed)');

  await page.goto(`${base}/ui`);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${base}/ui/login`);
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}

for (const line of checked) console.log(`axe ${line}`);
if (failures.length > 0) {
  for (const failure of failures) console.error(`FAIL ${failure}`);
  process.exit(1);
}
console.log(`dashboard ok; screenshots in ${artifacts}`);
