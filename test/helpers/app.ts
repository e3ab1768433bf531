// Builds the app for one test file against its own fresh database, and closes both when the test ends.
import type { Test } from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import { buildApp, type App, type BuildOptions } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createTestDatabase } from './database.js';
import { servingRoleUrl } from '../../src/db/serving-role.js';

export const TEST_SETUP_TOKEN = 'test-setup-token-0123456789-abcdefghijklmnop';
export const TEST_EMAIL_KEY = Buffer.alloc(32, 7).toString('base64');

export interface TestApp {
  app: App;
  databaseUrl: string;
  /** Log lines the app wrote (JSON strings), to assert that no secret reaches the log. */
  logs: string[];
}

/**
 * DATABASE_URL for an app under test: the database itself, or (a run with TEST_VIA_PGBOUNCER=1) the same database
 * through PgBouncer in transaction mode with DATABASE_DIRECT_URL beside it, as an operator behind a pooler sets them;
 * workspace requests as the serving role that `npm test` creates on the server (row-level security binds them).
 */
export function databaseEnv(url: string): { DATABASE_URL: string; DATABASE_SERVING_URL: string; DATABASE_DIRECT_URL?: string } {
  const bouncerPort = process.env.TEST_PGBOUNCER_PORT;
  if (!bouncerPort) return { DATABASE_URL: url, DATABASE_SERVING_URL: servingRoleUrl(url) };
  const pooled = new URL(url);
  pooled.port = bouncerPort;
  return { DATABASE_URL: pooled.toString(), DATABASE_SERVING_URL: servingRoleUrl(pooled.toString()), DATABASE_DIRECT_URL: url };
}

/** Starts an app on a fresh database. `env` overrides the test defaults (same names as the real env vars). */
export async function buildTestApp(t: Test, env: Record<string, string | undefined> = {}, options: BuildOptions = {}): Promise<TestApp> {
  const database = await createTestDatabase();
  const config = loadConfig({
    NODE_ENV: 'test',
    ...databaseEnv(database.url),
    DATA_DIR: '/nonexistent-data-dir-not-used-by-tests',
    JWT_SECRET: 'test-jwt-secret-0123456789-0123456789-abcdef',
    SERVICE_SETUP_TOKEN: TEST_SETUP_TOKEN,
    SERVICE_APP_URL: 'http://app.example.test',
    EMAIL_ENCRYPTION_KEY: TEST_EMAIL_KEY,
    LOG_LEVEL: 'info',
    OUTBOX_POLL_INTERVAL_MS: '200',
    // Every test client shares one address and signs many users in: the per-IP and per-user limits get their own tests.
    RATE_LIMIT_TOKEN_PER_IP_PER_MINUTE: '100000',
    RATE_LIMIT_PASSWORD_CHECKS_PER_HOUR: '100000',
    // Many test files send thousands of requests to one workspace within a minute: the budgets get their own tests.
    RATE_LIMIT_WORKSPACE_PER_MINUTE: '1000000',
    RATE_LIMIT_API_KEY_PER_MINUTE: '1000000',
    // The test SMTP server listens on 127.0.0.1; the host policy has its own test.
    EMAIL_SMTP_ALLOW_PRIVATE: 'true',
    ...env,
  });
  const logs: string[] = [];
  const app = await buildApp(config, { ...options, logStream: { write: (line: string) => void logs.push(line) } });
  await app.ready();
  t.teardown(async () => {
    await app.close();
    await database.drop();
  });
  return { app, databaseUrl: database.url, logs };
}

/** Parses a JSON response body. */
export const json = <T = any>(res: LightMyRequestResponse): T => JSON.parse(res.body) as T;

/** Authorization header for an access token. */
export const bearer = (access: string) => ({ authorization: `Bearer ${access}` });

/** A problem body without its `instance` (the request id, different on every request): for "the same answer" checks. */
export const problemBody = (res: LightMyRequestResponse): Record<string, unknown> => {
  const { instance: _instance, ...body } = json<Record<string, unknown>>(res);
  return body;
};
