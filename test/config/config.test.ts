// The environment is validated once at boot: bad secrets stop it with a clear message, a short setup token disables setup.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ConfigError, EnvSchema, loadConfig, withDatabaseUrl } from '../../src/config.js';
import { ensureDevelopmentSecrets } from '../../src/development-secrets.js';
import { projectRoot } from '../../src/lib/project-root.js';
import { buildTestApp, json } from '../helpers/app.js';

// A DATA_DIR that does not exist: loadConfig never needs one.
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

t.test('DATABASE_POOL_SIZE: 10 unless set, 1 to 999', async (t) => {
  t.equal(loadConfig(BASE).databasePoolSize, 10);
  t.equal(loadConfig({ ...BASE, DATABASE_POOL_SIZE: '4' }).databasePoolSize, 4);
  for (const value of ['0', '1000', '-1', 'ten'])
    t.throws(() => loadConfig({ ...BASE, DATABASE_POOL_SIZE: value }), { message: /DATABASE_POOL_SIZE/ }, value);
});

t.test('EMAIL_WORKER_CONCURRENCY and AUTOMATION_WORKER_CONCURRENCY: 3 and 10 unless set, 1 to 99', async (t) => {
  t.same(loadConfig(BASE).workerConcurrency, { email: 3, automation: 10 });
  t.same(loadConfig({ ...BASE, EMAIL_WORKER_CONCURRENCY: '1', AUTOMATION_WORKER_CONCURRENCY: '99' }).workerConcurrency, {
    email: 1,
    automation: 99,
  });
  for (const env of ['EMAIL_WORKER_CONCURRENCY', 'AUTOMATION_WORKER_CONCURRENCY']) {
    for (const value of ['0', '100', '-1', 'three'])
      t.throws(() => loadConfig({ ...BASE, [env]: value }), { message: new RegExp(env) }, value);
  }
});

t.test('outside production JWT_SECRET is required too: loadConfig generates nothing, server.ts brings it (below)', async (t) => {
  for (const NODE_ENV of [undefined, 'development', 'test']) {
    t.throws(
      () => loadConfig({ NODE_ENV, DATA_DIR: BASE.DATA_DIR }),
      { name: 'ConfigError', message: /JWT_SECRET is required/ },
      String(NODE_ENV),
    );
  }
  t.throws(() => loadConfig({ ...BASE, JWT_SECRET: '' }), { message: /JWT_SECRET is required/ }, 'empty counts as unset');
});

t.test('loadConfig writes no file and reads nothing but its argument', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'crm-config-test-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { DATA_DIR: dataDir, JWT_SECRET: BASE.JWT_SECRET };
  t.equal(loadConfig(env).dataDir, dataDir);
  t.throws(() => loadConfig({ DATA_DIR: dataDir }), ConfigError);
  t.throws(() => loadConfig({ DATA_DIR: dataDir, NODE_ENV: 'production' }), ConfigError);
  t.same(readdirSync(dataDir), [], 'nothing written, with or without a secret');
  t.same(loadConfig(env), loadConfig(env), 'the same input gives the same config');
  t.notOk(existsSync(BASE.DATA_DIR), 'a missing DATA_DIR is not created');
});

t.test('the config is deeply frozen: an assignment throws (ESM code is strict)', async (t) => {
  const config = loadConfig({ ...BASE, SERVICE_SETUP_TOKEN: 'short', EMAIL_ENCRYPTION_KEY: base64OfBytes(32) });
  for (const part of [config, config.rateLimits, config.rateLimits.setup, config.metrics, config.passwordHashing, config.adminSession])
    t.ok(Object.isFrozen(part));
  t.ok(Object.isFrozen(config.warnings));
  t.throws(() => {
    // @ts-expect-error the type is read-only as well
    config.port = 1;
  }, TypeError);
  t.throws(() => {
    // @ts-expect-error nested objects too
    config.rateLimits.setup.max = 1000;
  }, TypeError);
  t.throws(() => {
    // @ts-expect-error adding a field
    config.extra = true;
  }, TypeError);
  t.throws(() => (config.warnings as string[]).push('more'), TypeError);
  t.equal(config.port, 3000);
  t.equal(config.rateLimits.setup.max, 5);
  t.equal(config.warnings.length, 1);
  t.equal(config.emailEncryptionKey?.length, 32, 'the key stays a Buffer (typed arrays cannot be frozen)');
});

t.test('withDatabaseUrl returns a new frozen config and leaves the one from boot as it was', async (t) => {
  const config = loadConfig(BASE);
  t.equal(config.databaseUrl, undefined);
  const url = 'postgresql://crm:secret@127.0.0.1:5432/crm';
  const runtime = withDatabaseUrl(config, url);
  t.not(runtime, config);
  t.equal(runtime.databaseUrl, url);
  t.equal(config.databaseUrl, undefined, 'the original is unchanged');
  t.ok(Object.isFrozen(runtime));
  t.same({ ...runtime, databaseUrl: undefined }, config, 'every other field as loaded');
  t.throws(() => withDatabaseUrl(config, 'mysql://x'), { name: 'ConfigError', message: /DATABASE_URL/ });
});

t.test('ensureDevelopmentSecrets: JWT_SECRET generated once into DATA_DIR outside production, never in production', async (t) => {
  const dataDir = path.join(mkdtempSync(path.join(tmpdir(), 'crm-secrets-test-')), 'data');
  t.teardown(() => rmSync(path.dirname(dataDir), { recursive: true, force: true }));
  const source = { DATA_DIR: dataDir };
  const env = ensureDevelopmentSecrets(source);
  t.same(source, { DATA_DIR: dataDir }, 'the given environment is not changed');
  const file = path.join(dataDir, 'jwt-secret');
  t.equal(env.JWT_SECRET, readFileSync(file, 'utf8'));
  t.ok(env.JWT_SECRET!.length >= 32);
  t.equal(statSync(file).mode & 0o777, 0o600, 'owner-only');
  t.equal(ensureDevelopmentSecrets({ ...source, NODE_ENV: 'test' }).JWT_SECRET, env.JWT_SECRET, 'kept across restarts');
  t.equal(loadConfig(env).jwtSecret, env.JWT_SECRET);

  const given = { ...source, JWT_SECRET: BASE.JWT_SECRET };
  t.equal(ensureDevelopmentSecrets(given), given, 'a set secret is used as it is');
  const productionDir = path.join(path.dirname(dataDir), 'production');
  const production = { DATA_DIR: productionDir, NODE_ENV: 'production' };
  t.equal(ensureDevelopmentSecrets(production), production, 'production: nothing generated');
  t.notOk(existsSync(productionDir), 'nothing written');
  t.throws(() => loadConfig(ensureDevelopmentSecrets(production)), { message: /JWT_SECRET is required when NODE_ENV=production/ });
  t.throws(() => ensureDevelopmentSecrets({ ...source, NODE_ENV: 'staging' }), { name: 'ConfigError', message: /NODE_ENV/ });
});

t.test('docs/configuration.md documents exactly the variables of the schema', async (t) => {
  const page = readFileSync(path.join(projectRoot, 'docs', 'configuration.md'), 'utf8');
  const documented = page
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .flatMap((line) => [...line.split('|')[1]!.matchAll(/`([A-Z0-9_]+)`/g)].map((match) => match[1]!));
  t.same([...documented].sort(), Object.keys(EnvSchema.properties).sort());
});
