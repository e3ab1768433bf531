// Reads and validates every environment variable once at boot, and exposes them as one typed object.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

const BooleanString = Type.Union([Type.Literal('true'), Type.Literal('false'), Type.Literal('1'), Type.Literal('0')]);
const PositiveInteger = Type.String({ pattern: '^[1-9][0-9]{0,9}$' });

export const EnvSchema = Type.Object({
  NODE_ENV: Type.Optional(Type.Union([Type.Literal('development'), Type.Literal('production'), Type.Literal('test')])),
  PORT: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$' })),
  HOST: Type.Optional(Type.String({ minLength: 1 })),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATA_DIR: Type.Optional(Type.String({ minLength: 1 })),
  SERVICE_SETUP_TOKEN: Type.Optional(Type.String()),
  SERVICE_APP_URL: Type.Optional(Type.String({ pattern: '^https?://[^\\s]+$' })),
  JWT_SECRET: Type.Optional(Type.String({ minLength: 32 })),
  EMAIL_ENCRYPTION_KEY: Type.Optional(Type.String()),
  ACCESS_TOKEN_TTL: Type.Optional(PositiveInteger),
  REFRESH_TOKEN_TTL: Type.Optional(PositiveInteger),
  TRUST_PROXY: Type.Optional(Type.String()),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  METRICS_PORT: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$' })),
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 32 })),
  LOG_LEVEL: Type.Optional(Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)))),
  AUTOMATION_WEBHOOK_ALLOW_PRIVATE: Type.Optional(BooleanString),
  EMAIL_SMTP_ALLOW_PRIVATE: Type.Optional(BooleanString),
  OUTBOX_POLL_INTERVAL_MS: Type.Optional(PositiveInteger),
  AUTOMATION_EMAILS_PER_HOUR: Type.Optional(PositiveInteger),
  WEB_CONCURRENCY: Type.Optional(PositiveInteger),
  RATE_LIMIT_SETUP_PER_MINUTE: Type.Optional(PositiveInteger),
  RATE_LIMIT_TOKEN_PER_MINUTE: Type.Optional(PositiveInteger),
  RATE_LIMIT_TOKEN_PER_IP_PER_MINUTE: Type.Optional(PositiveInteger),
  RATE_LIMIT_PASSWORD_CHECKS_PER_HOUR: Type.Optional(PositiveInteger),
  PASSWORD_HASH_CONCURRENCY: Type.Optional(PositiveInteger),
  PASSWORD_HASH_QUEUE: Type.Optional(Type.String({ pattern: '^[0-9]{1,6}$' })),
  RATE_LIMIT_PASSWORD_RESET_PER_HOUR: Type.Optional(PositiveInteger),
  RATE_LIMIT_INVITATIONS_PER_DAY: Type.Optional(PositiveInteger),
  RATE_LIMIT_PROVISIONING_PER_DAY: Type.Optional(PositiveInteger),
  RATE_LIMIT_ADMIN_INVITATIONS_PER_DAY: Type.Optional(PositiveInteger),
  RATE_LIMIT_TEST_SENDS_PER_HOUR: Type.Optional(PositiveInteger),
  ADMIN_SESSION_IDLE_SECONDS: Type.Optional(PositiveInteger),
  ADMIN_SESSION_MAX_SECONDS: Type.Optional(PositiveInteger),
});
export type Env = Static<typeof EnvSchema>;

export interface RateLimitSetting {
  max: number;
  timeWindowMs: number;
}

export interface Config {
  nodeEnv: 'development' | 'production' | 'test';
  port: number;
  host: string;
  /** Unset until server.ts starts the embedded PostgreSQL; buildApp requires it. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** null when unset or shorter than 32 characters: setup is then unavailable. */
  setupToken: string | null;
  appUrl: string;
  jwtSecret: string;
  /** 32-byte AES-256-GCM key, or null: SMTP passwords cannot be stored without it. */
  emailEncryptionKey: Buffer | null;
  accessTokenTtl: number;
  refreshTokenTtl: number;
  trustProxy: boolean | number | string;
  redisUrl: string | undefined;
  /** Prometheus metrics: their own listener on HOST:port, and/or /metrics on the API port behind a Bearer token. */
  metrics: { port: number | null; token: string | null };
  logLevel: string;
  webhookAllowPrivate: boolean;
  /** Whether workspace email accounts may point at loopback/private hosts (the installation fallback always may). */
  smtpAllowPrivate: boolean;
  outboxPollIntervalMs: number;
  /** send_email automation messages one workspace may send per hour; beyond it runs end `skipped`. */
  automationEmailsPerHour: number;
  /** Concurrent argon2 hashes, and how many more may wait before callers get 503. */
  passwordHashing: { concurrency: number; queue: number };
  /** Server processes on the one port (node:cluster); 1 runs the server in the started process itself. */
  webConcurrency: number;
  rateLimits: {
    setup: RateLimitSetting;
    token: RateLimitSetting;
    tokenPerIp: RateLimitSetting;
    passwordChecks: RateLimitSetting;
    passwordReset: RateLimitSetting;
    invitations: RateLimitSetting;
    provisioning: RateLimitSetting;
    adminInvitations: RateLimitSetting;
    testSends: RateLimitSetting;
  };
  /** Admin console sessions: idle timeout and absolute lifetime, in seconds. */
  adminSession: { idleSeconds: number; maxSeconds: number };
  /** Problems that do not stop the boot but that an operator must see in the log. */
  warnings: string[];
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

function parseTrustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || value === '' || value === 'off' || value === 'false' || value === '0') return false;
  if (value === 'true' || value === 'on') return true;
  if (/^[0-9]+$/.test(value)) return Number(value);
  return value; // comma-separated addresses or CIDR ranges, as Fastify's trustProxy accepts
}

function decodeEncryptionKey(value: string | undefined): Buffer | null {
  if (value === undefined || value === '') return null;
  const key = Buffer.from(value, 'base64');
  if (key.length !== 32 || !/^[A-Za-z0-9+/]+={0,2}$/.test(value)) {
    throw new ConfigError('EMAIL_ENCRYPTION_KEY must be the base64 encoding of exactly 32 bytes (e.g. `openssl rand -base64 32`).');
  }
  return key;
}

/** Outside production a missing JWT_SECRET is generated once and kept in DATA_DIR, so restarts keep sessions. */
function developmentJwtSecret(dataDir: string): string {
  const file = path.join(dataDir, 'jwt-secret');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(48).toString('base64url');
  writeFileSync(file, secret, { mode: 0o600 });
  chmodSync(file, 0o600);
  return secret;
}

export function loadConfig(source: Record<string, string | undefined>): Config {
  // Empty strings count as unset, as in most .env tooling.
  const env = Object.fromEntries(
    Object.keys(EnvSchema.properties)
      .filter((key) => source[key] !== undefined && source[key] !== '')
      .map((key) => [key, source[key]]),
  );
  const errors = [...Value.Errors(EnvSchema, env)];
  if (errors.length > 0) {
    const lines = errors.map((e) => `${e.path.slice(1) || '(env)'}: ${e.message}`);
    throw new ConfigError(`Invalid environment:\n  ${[...new Set(lines)].join('\n  ')}`);
  }
  const valid = env as Env;
  const nodeEnv = valid.NODE_ENV ?? 'development';
  const dataDir = path.resolve(valid.DATA_DIR ?? '.data');
  const warnings: string[] = [];

  let setupToken: string | null = valid.SERVICE_SETUP_TOKEN ?? null;
  if (setupToken !== null && setupToken.length < 32) {
    warnings.push('SERVICE_SETUP_TOKEN is shorter than 32 characters: first-run setup is unavailable.');
    setupToken = null;
  }

  if (nodeEnv === 'production' && !valid.JWT_SECRET) {
    throw new ConfigError('JWT_SECRET is required when NODE_ENV=production (at least 32 characters).');
  }
  const jwtSecret = valid.JWT_SECRET ?? developmentJwtSecret(dataDir);
  const num = (v: string | undefined, fallback: number) => (v === undefined ? fallback : Number(v));
  // Production uses every core by default; development keeps one process (one log, one debugger target).
  const webConcurrency = num(valid.WEB_CONCURRENCY, nodeEnv === 'production' ? availableParallelism() : 1);
  if (webConcurrency > 1 && !valid.REDIS_URL) {
    warnings.push(
      `WEB_CONCURRENCY=${webConcurrency} without REDIS_URL: each process counts rate limits on its own, so a client gets up to ${webConcurrency} times each limit.`,
    );
  }

  return {
    nodeEnv,
    port: num(valid.PORT, 3000),
    host: valid.HOST ?? '127.0.0.1',
    databaseUrl: valid.DATABASE_URL,
    dataDir,
    setupToken,
    appUrl: (valid.SERVICE_APP_URL ?? 'http://localhost:5173').replace(/\/+$/, ''),
    jwtSecret,
    emailEncryptionKey: decodeEncryptionKey(valid.EMAIL_ENCRYPTION_KEY),
    accessTokenTtl: num(valid.ACCESS_TOKEN_TTL, 900),
    refreshTokenTtl: num(valid.REFRESH_TOKEN_TTL, 604_800),
    trustProxy: parseTrustProxy(valid.TRUST_PROXY),
    redisUrl: valid.REDIS_URL,
    metrics: { port: valid.METRICS_PORT === undefined ? null : Number(valid.METRICS_PORT), token: valid.METRICS_TOKEN ?? null },
    logLevel: valid.LOG_LEVEL ?? 'info',
    webhookAllowPrivate: valid.AUTOMATION_WEBHOOK_ALLOW_PRIVATE === 'true' || valid.AUTOMATION_WEBHOOK_ALLOW_PRIVATE === '1',
    smtpAllowPrivate: valid.EMAIL_SMTP_ALLOW_PRIVATE === 'true' || valid.EMAIL_SMTP_ALLOW_PRIVATE === '1',
    outboxPollIntervalMs: num(valid.OUTBOX_POLL_INTERVAL_MS, 2000),
    automationEmailsPerHour: num(valid.AUTOMATION_EMAILS_PER_HOUR, 100),
    passwordHashing: { concurrency: num(valid.PASSWORD_HASH_CONCURRENCY, 2), queue: num(valid.PASSWORD_HASH_QUEUE, 32) },
    webConcurrency,
    rateLimits: {
      setup: { max: num(valid.RATE_LIMIT_SETUP_PER_MINUTE, 5), timeWindowMs: MINUTE },
      token: { max: num(valid.RATE_LIMIT_TOKEN_PER_MINUTE, 10), timeWindowMs: MINUTE },
      tokenPerIp: { max: num(valid.RATE_LIMIT_TOKEN_PER_IP_PER_MINUTE, 30), timeWindowMs: MINUTE },
      passwordChecks: { max: num(valid.RATE_LIMIT_PASSWORD_CHECKS_PER_HOUR, 10), timeWindowMs: HOUR },
      passwordReset: { max: num(valid.RATE_LIMIT_PASSWORD_RESET_PER_HOUR, 5), timeWindowMs: HOUR },
      invitations: { max: num(valid.RATE_LIMIT_INVITATIONS_PER_DAY, 20), timeWindowMs: DAY },
      provisioning: { max: num(valid.RATE_LIMIT_PROVISIONING_PER_DAY, 20), timeWindowMs: DAY },
      adminInvitations: { max: num(valid.RATE_LIMIT_ADMIN_INVITATIONS_PER_DAY, 10), timeWindowMs: DAY },
      testSends: { max: num(valid.RATE_LIMIT_TEST_SENDS_PER_HOUR, 60), timeWindowMs: HOUR },
    },
    adminSession: { idleSeconds: num(valid.ADMIN_SESSION_IDLE_SECONDS, 1800), maxSeconds: num(valid.ADMIN_SESSION_MAX_SECONDS, 43_200) },
    warnings,
  };
}

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
  }
}
