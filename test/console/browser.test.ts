// The console driven by a real headless Chromium (shipped inside @sparticuz/chromium) against the app on a port.
import t from 'tap';
import chromium from '@sparticuz/chromium';
import puppeteer from 'puppeteer-core';
import { buildTestApp, bearer } from '../helpers/app.js';
import { ADMIN, createUser, setupInstallation } from '../helpers/fixtures.js';

const { app } = await buildTestApp(t);
const { organizationId } = await setupInstallation(app);
await app.db.organization.update({ where: { id: organizationId }, data: { name: '<script>window.pwned=1</script>Acme' } });
const victim = await createUser(app, { username: 'victim-user' });
const failed = await app.db.emailOutbox.create({
  data: { toAddress: 'stuck@example.test', subject: 'Invitation', status: 'failed', attempts: 5, lastError: 'connection refused' },
});
const address = await app.listen({ host: '127.0.0.1', port: 0 });

const browser = await puppeteer.launch({
  args: [...chromium.args, '--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  executablePath: await chromium.executablePath(),
  headless: true,
});
t.teardown(() => browser.close());
const page = await browser.newPage();

/** Clicks the button with this exact text and waits for the page it leads to. */
async function clickButton(text: string) {
  const [button] = await page.$$(`xpath/.//button[normalize-space(.)="${text}"]`);
  if (!button) throw new Error(`no button ${text}`);
  await Promise.all([page.waitForNavigation(), button.click()]);
}

t.test('sign in, dashboard counts, search and deactivate/reactivate a user', async (t) => {
  await page.goto(`${address}/admin/`);
  t.match(page.url(), /\/admin\/login\/\?next=/);
  await page.type('#username', ADMIN.username);
  await page.type('#password', ADMIN.password);
  await clickButton('Sign in');
  t.equal(new URL(page.url()).pathname, '/admin/');
  const users = await page.$eval('[data-count="Users"]', (el) => (el as unknown as { textContent: string }).textContent);
  t.equal(users, String(await app.db.user.count()));
  t.equal(await page.$eval('[data-count="Failed emails"]', (el) => (el as unknown as { textContent: string }).textContent), '1');

  await page.goto(`${address}/admin/users/`);
  await page.type('#search', 'victim');
  await Promise.all([
    page.waitForNavigation(),
    page.$eval('form[method="get"]', (form) => (form as unknown as { submit(): void }).submit()),
  ]);
  const names = await page.$$eval('tbody tr td:first-child', (cells) =>
    cells.map((c) => (c as unknown as { textContent: string }).textContent),
  );
  t.same(names, ['victim-user']);
  await Promise.all([page.waitForNavigation(), page.click('tbody a')]);
  await clickButton('Deactivate');
  t.match(await page.content(), /User deactivated/);
  t.equal(
    (await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: bearer(victim.access) })).statusCode,
    401,
    'the API refuses its token',
  );
  await clickButton('Reactivate');
  t.equal((await app.db.user.findUniqueOrThrow({ where: { id: victim.id } })).isActive, true);
});

t.test('retry a failed email', async (t) => {
  await page.goto(`${address}/admin/outbox/?status=failed`);
  await clickButton('Retry');
  t.match(await page.content(), /queued again/);
  // The worker may already have tried it again (no SMTP here): the retry's audit row proves it went back to the queue.
  t.equal(await app.db.auditLog.count({ where: { action: 'email.retried', targetId: failed.id } }), 1);
});

t.test('revoke a pending invitation', async (t) => {
  const invitation = await app.db.invitation.create({
    data: {
      organizationId,
      email: 'invitee@example.test',
      role: 'member',
      tokenHash: 'b'.repeat(64),
      expiresAt: new Date(Date.now() + 86_400_000),
    },
  });
  await page.goto(`${address}/admin/invitations/?status=pending`);
  await clickButton('Revoke');
  t.match(await page.content(), /Invitation revoked/);
  t.ok((await app.db.invitation.findUniqueOrThrow({ where: { id: invitation.id } })).revokedAt, 'revoked in the database');
  t.equal(await app.db.auditLog.count({ where: { action: 'invitation.revoked', targetId: invitation.id } }), 1);
});

t.test('usable at 400 px and at 1280 px wide: the page itself never scrolls sideways', async (t) => {
  for (const width of [400, 1280]) {
    await page.setViewport({ width, height: 900 });
    for (const path of ['/admin/', '/admin/users/', '/admin/outbox/', '/admin/audit/']) {
      await page.goto(`${address}${path}`);
      const scrollWidth = await page.evaluate(
        () => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth,
      );
      t.ok(scrollWidth <= width, `${path} at ${width} px: ${scrollWidth} px wide`);
    }
  }
  if (process.env.CONSOLE_SCREENSHOT) await page.screenshot({ path: process.env.CONSOLE_SCREENSHOT });
});

t.test('a <script> in a workspace name renders as text and never runs', async (t) => {
  await page.goto(`${address}/admin/organizations/`);
  const text = await page.$eval('tbody tr td:first-child', (el) => (el as unknown as { textContent: string }).textContent);
  t.equal(text, '<script>window.pwned=1</script>Acme');
  t.equal(await page.evaluate('window.pwned'), undefined);
});

t.test('sign out; the old cookie then lands on the sign-in page', async (t) => {
  const [cookie] = await browser.cookies();
  await clickButton('Sign out');
  t.match(page.url(), /\/admin\/login\/$/);
  t.ok(cookie, 'there was a session cookie');
  await browser.setCookie({ ...cookie!, name: cookie!.name, value: cookie!.value });
  await page.goto(`${address}/admin/`);
  t.match(page.url(), /\/admin\/login\//);
  t.match(await page.content(), /<button type="submit">Sign in<\/button>/);
});
