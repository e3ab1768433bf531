// The environment is validated once at boot: bad secrets stop it with a clear message, a short setup token disables setup.
import { availableParallelism } from 'node:os';
import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config.js';
import { buildTestApp, json } from '../helpers/app.js';

// JWT_SECRET given, so no test writes a generated secret to DATA_DIR.
const BASE = { JWT_SECRET: 'config-test-jwt-secret-0123456789-abcdef', DATA_DIR: '/nonexistent-config-test-dir' };
const base64OfBytes = (n: number) => Buffer.alloc(n, 1).toString('base64');

t.test('EMAIL_ENCRYPTION_KEY must decode to exactly 32 bytes', async (t) => {
  for (const value of [base64OfBytes(31), base64OfBytes(33), 'not base64 at all!', Buffer.alloc(32, 250).toString('base64url')]) {
    t.throws(
      () => loadConfig({ ...BASE, EMAIL_ENCRYPTION_KEY: value }),
      {
        name: 'ConfigError',
        message: /EMAIL_ENCRYPTION_KEY must be the base64 encoding of exactly 32 bytes/,
      },
      value,
    );
  }
  const key = loadConfig({ ...BASE, EMAIL_ENCRYPTION_KEY: base64OfBytes(32) }).emailEncryptionKey;
  t.equal(key?.length, 32);
  t.equal(loadConfig(BASE).emailEncryptionKey, null, 'unset: SMTP secrets cannot be stored, but the app boots');
});

t.test('NODE_ENV=production requires JWT_SECRET', async (t) => {
  t.throws(() => loadConfig({ NODE_ENV: 'production', DATA_DIR: BASE.DATA_DIR }), {
    name: 'ConfigError',
    message: /JWT_SECRET is required when NODE_ENV=production/,
  });
  t.throws(() => loadConfig({ ...BASE, NODE_ENV: 'production', JWT_SECRET: 'too-short' }), ConfigError, 'a short secret is refused too');
  t.equal(loadConfig({ ...BASE, NODE_ENV: 'production' }).jwtSecret, BASE.JWT_SECRET);
});

t.test('invalid values name the variable', async (t) => {
  t.throws(() => loadConfig({ ...BASE, PORT: 'eighty', DATABASE_URL: 'mysql://x' }), {
    message: /PORT[\s\S]*DATABASE_URL|DATABASE_URL[\s\S]*PORT/,
  });
});

t.test('a SERVICE_SETUP_TOKEN under 32 characters is dropped with a warning', async (t) => {
  const short = loadConfig({ ...BASE, SERVICE_SETUP_TOKEN: 'x'.repeat(31) });
  t.equal(short.setupToken, null);
  t.match(short.warnings, [/SERVICE_SETUP_TOKEN is shorter than 32 characters/]);
  const long = loadConfig({ ...BASE, SERVICE_SETUP_TOKEN: 'x'.repeat(32) });
  t.equal(long.setupToken, 'x'.repeat(32));
  t.same(long.warnings, []);
});

t.test('with a short setup token the app logs the warning and GET /setup/ says unavailable', async (t) => {
  const shortToken = 'short-setup-token-value';
  const { app, logs } = await buildTestApp(t, { SERVICE_SETUP_TOKEN: shortToken });
  const res = await app.inject({ method: 'GET', url: '/api/v1/setup/' });
  t.equal(res.statusCode, 200);
  t.same(json(res), { available: false });
  t.ok(
    logs.some((line) => line.includes('SERVICE_SETUP_TOKEN is shorter than 32 characters')),
    'warning logged',
  );
  t.notOk(
    logs.some((line) => line.includes(shortToken)),
    'the token itself is not logged',
  );
});

t.test('WEB_CONCURRENCY: 1 in development, every CPU in production, a warning when rate limits are not shared', async (t) => {
  t.equal(loadConfig(BASE).webConcurrency, 1);
  t.equal(loadConfig({ ...BASE, NODE_ENV: 'production' }).webConcurrency, availableParallelism());
  const two = loadConfig({ ...BASE, WEB_CONCURRENCY: '2' });
  t.equal(two.webConcurrency, 2);
  t.match(two.warnings, [/WEB_CONCURRENCY=2 without REDIS_URL/]);
  t.same(loadConfig({ ...BASE, WEB_CONCURRENCY: '2', REDIS_URL: 'redis://127.0.0.1:6379' }).warnings, []);
  for (const value of ['0', '-1', 'many'])
    t.throws(() => loadConfig({ ...BASE, WEB_CONCURRENCY: value }), { message: /WEB_CONCURRENCY/ }, value);
});
