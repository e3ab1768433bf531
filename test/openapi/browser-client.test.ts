// The generated hey-api SDK, bundled with esbuild, in headless Chromium WITH web security (CORS enforced), served from a
// second origin against the started API: a web app's whole session works; a page of an origin not allowed gets nothing.
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createClient } from '@hey-api/openapi-ts';
import chromium from '@sparticuz/chromium';
import { build } from 'esbuild';
import puppeteer, { type Page } from 'puppeteer-core';
import { OPENAPI_FILE } from '../../scripts/generate-openapi.js';
import { buildTestApp } from '../helpers/app.js';
import { ADMIN, setupInstallation } from '../helpers/fixtures.js';
import { freePort } from '../helpers/net.js';

const SCENARIO = path.join(import.meta.dirname, 'client-scenario', 'browser-scenario.ts');

// The SDK from the committed document, bundled with the scenario for the browser.
const dir = await mkdtemp(path.join(tmpdir(), 'browser-client-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
await createClient({ input: OPENAPI_FILE, output: path.join(dir, 'sdk'), logs: { level: 'silent' } });
await copyFile(SCENARIO, path.join(dir, 'scenario.ts'));
await writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
const bundle = await build({
  entryPoints: [path.join(dir, 'scenario.ts')],
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'chrome120',
  write: false,
  logLevel: 'silent',
});
const script = bundle.outputFiles[0]!.text;

// The web app's origin: a plain static server on a port of its own. http://localhost:<port> is the same server under
// an origin the API does not allow.
const webPort = await freePort();
const webOrigin = `http://127.0.0.1:${webPort}`;
const web = createServer((request, response) => {
  if (request.url === '/app.js') {
    response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(script);
    return;
  }
  response
    .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    .end('<!doctype html><meta charset="utf-8"><title>CRM web app</title><script type="module" src="/app.js"></script>');
});
await new Promise<void>((resolve) => web.listen(webPort, '127.0.0.1', resolve));
t.teardown(() => new Promise((resolve) => web.close(resolve)));

const { app } = await buildTestApp(t, { SERVICE_APP_URL: `${webOrigin}/` });
const { organizationId } = await setupInstallation(app);
const api = await app.listen({ host: '127.0.0.1', port: 0 });

const browser = await puppeteer.launch({
  // @sparticuz/chromium's defaults switch CORS off (--disable-web-security): dropped, or this test proves nothing.
  args: [
    ...chromium.args.filter((arg) => arg !== '--disable-web-security'),
    '--no-sandbox',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
  executablePath: await chromium.executablePath(),
  headless: true,
});
t.teardown(() => browser.close());

/** A page of `origin` with the bundle loaded. */
async function open(origin: string): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => 'runScenario' in globalThis);
  return page;
}

t.test('the launch arguments keep web security on', async (t) => {
  t.notOk(browser.process()?.spawnargs.includes('--disable-web-security'));
});

t.test('a web app on SERVICE_APP_URL signs in, writes idempotently, pages, searches, edits safely and signs out', async (t) => {
  const page = await open(webOrigin);
  const input = { api, username: ADMIN.username, password: ADMIN.password, organizationId };
  const checks = (await page.evaluate(
    (value) => (globalThis as unknown as { runScenario(i: typeof value): Promise<unknown> }).runScenario(value),
    input,
  )) as { message: string; found: unknown; wanted: unknown }[];
  t.ok(checks.length >= 25, `${checks.length} checks ran in the browser`);
  for (const { message, found, wanted } of checks) t.same(found, wanted, message);
  t.equal(await app.db.company.count({ where: { organizationId } }), 3, 'the replays created nothing more');
});

t.test('with web security on, the browser refuses what CORS does not allow', async (t) => {
  const allowed = await open(webOrigin);
  // The console is same-origin only: even the allowed app's page cannot read it.
  const consoleRead = await allowed.evaluate(
    (url) =>
      fetch(url).then(
        (res) => `answered ${res.status}`,
        (error: Error) => error.name,
      ),
    `${api}/admin/login/`,
  );
  t.equal(consoleRead, 'TypeError', 'a fetch of /admin/ from the app origin fails in the browser');

  const stranger = await open(webOrigin.replace('127.0.0.1', 'localhost'));
  const outcome = await stranger.evaluate(
    (value) => (globalThis as unknown as { tryFromElsewhere(api: string): Promise<string> }).tryFromElsewhere(value),
    api,
  );
  t.equal(outcome, 'TypeError', 'a page of an origin not allowed gets no answer (the preflight has no Allow-Origin)');
});
