// Setup POSTs are rate-limited per client IP (default 5 per minute, both endpoints together); GET is not.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';

const { app } = await buildTestApp(t);
const attempt = (url: string, remoteAddress = '127.0.0.1') =>
  app.inject({ method: 'POST', url, remoteAddress, payload: { setup_token: 'guess' } });

t.test('the sixth setup POST within a minute answers 429 with Retry-After', async (t) => {
  for (let i = 0; i < 3; i += 1) t.equal((await attempt('/api/v1/setup/')).statusCode, 400, `attempt ${i + 1}`);
  for (let i = 3; i < 5; i += 1) t.equal((await attempt('/api/v1/setup/smtp-test/')).statusCode, 400, `attempt ${i + 1}`);

  for (const url of ['/api/v1/setup/', '/api/v1/setup/smtp-test/']) {
    const limited = await attempt(url);
    t.equal(limited.statusCode, 429, url);
    t.match(limited.headers['content-type'], /^application\/problem\+json/);
    t.match(json(limited), { status: 429, code: 'rate_limited' });
    t.ok(Number(limited.headers['retry-after']) > 0, `Retry-After: ${String(limited.headers['retry-after'])}`);
  }
});

t.test('other client addresses and GET /setup/ are not affected', async (t) => {
  t.equal((await attempt('/api/v1/setup/', '10.0.0.2')).statusCode, 400);
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/setup/' })).statusCode, 200);
});
