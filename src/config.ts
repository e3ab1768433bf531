// Declares every environment variable once (name, schema, default, conversion); validation and the Config type derive from it.
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { type Static, type TObject, type TSchema, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export interface RateLimitSetting {
  max: number;
  timeWindowMs: number;
}

const NODE_ENVS = ['development', 'production', 'test'] as const;
export type NodeEnv = (typeof NODE_ENVS)[number];

/** What a conversion may consult besides its own value: NODE_ENV (some defaults differ in production) and the warnings. */
interface Context {
  readonly nodeEnv: NodeEnv;
  readonly warnings: string[];
}

interface VariableTree {
  readonly [field: string]: Variable<unknown> | VariableTree;
}

/** One environment variable: `read` turns its validated value, or undefined when unset, into the config field. */
interface Variable<T> {
  readonly env: string;
  readonly schema: TSchema;
  readonly read: (value: string | undefined, context: Context) => T;
}

function variable<S extends TSchema, T>(env: string, schema: S, read: (value: Static<S> | undefined, context: Context) => T): Variable<T> {
  // The schema is checked before any read, so the value has its static type although the table stores plain strings.
  return { env, schema, read: read as Variable<T>['read'] };
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** A schema whose values are strings, as every environment variable's. */
type TextSchema = TSchema & { static: string };

const BooleanString = Type.Union([Type.Literal('true'), Type.Literal('false'), Type.Literal('1'), Type.Literal('0')]);
const PositiveInteger = Type.String({ pattern: '^[1-9][0-9]{0,9}$' });
const PortNumber = Type.String({ pattern: '^[0-9]{1,5}$' });
/** 1 to 99: the jobs one job runner takes at once. */
const WorkerConcurrency = Type.String({ pattern: '^[1-9][0-9]?$' });

/** A number, with a default that may depend on NODE_ENV. */
const integer = (env: string, fallback: number | ((context: Context) => number), schema: TextSchema = PositiveInteger) =>
  variable(env, schema, (value, context) => {
    if (value !== undefined) return Number(value);
    return typeof fallback === 'number' ? fallback : fallback(context);
  });
const text = (env: string, fallback: string, schema: TextSchema = Type.String({ minLength: 1 })) =>
  variable(env, schema, (value) => value ?? fallback);
const flag = (env: string) => variable(env, BooleanString, (value) => value === 'true' || value === '1');
const rateLimit = (env: string, max: number, timeWindowMs: number) =>
  variable(env, PositiveInteger, (value): RateLimitSetting => ({ max: value === undefined ? max : Number(value), timeWindowMs }));

function parseTrustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || value === 'off' || value === 'false' || value === '0') return false;
  if (value === 'true' || value === 'on') return true;
  if (/^[0-9]+$/.test(value)) return Number(value);
  return value; // comma-separated addresses or CIDR ranges, as Fastify's trustProxy accepts
}

function decodeEncryptionKey(value: string | undefined): Buffer | null {
  if (value === undefined) return null;
  const key = Buffer.from(value, 'base64');
  if (key.length !== 32 || !/^[A-Za-z0-9+/]+={0,2}$/.test(value)) {
    throw new ConfigError('EMAIL_ENCRYPTION_KEY must be the base64 encoding of exactly 32 bytes (e.g. `openssl rand -base64 32`).');
  }
  return key;
}

/** DATABASE_POOL_SIZE when unset (node-postgres's own default); the bench's baseline holds as many. */
export const DEFAULT_DATABASE_POOL_SIZE = 10;

// NODE_ENV is read before the others, whose context it is; its own default depends on nothing.
const NODE_ENV = {
  env: 'NODE_ENV',
  schema: Type.Union(NODE_ENVS.map((name) => Type.Literal(name))),
  read: (value: string | undefined): NodeEnv => (value as NodeEnv | undefined) ?? 'development',
} satisfies Variable<NodeEnv>;

/** The variables, in the shape of Config: each leaf is one environment variable, declared nowhere else. */
const variables = {
  nodeEnv: NODE_ENV,
  port: integer('PORT', 3000, PortNumber),
  host: text('HOST', '127.0.0.1'),
  /** Unset until server.ts starts the embedded PostgreSQL (withDatabaseUrl); buildApp requires it. */
  databaseUrl: variable('DATABASE_URL', Type.String({ pattern: '^postgres(ql)?://' }), (value) => value),
  /**
   * PostgreSQL itself when DATABASE_URL points at a transaction-mode pooler (PgBouncer): migrations, the job queue
   * (LISTEN/NOTIFY, its locks) and the workers' liveness locks need a session of their own. Setting it also tells the
   * service that DATABASE_URL is such a pooler: no named prepared statements are sent through it.
   */
  databaseDirectUrl: variable('DATABASE_DIRECT_URL', Type.String({ pattern: '^postgres(ql)?://' }), (value) => value),
  /**
   * The role the workspace requests' data is read and written as, bound by row-level security (not a superuser, not
   * BYPASSRLS; docs/tenant-isolation.md). Unset, they use DATABASE_URL's role: on the embedded database server.ts sets
   * it to the serving role it creates; elsewhere the service warns and the production-readiness check fails when
   * DATABASE_URL's role bypasses the policies. Through the same pooler as DATABASE_URL when there is one.
   */
  databaseServingUrl: variable('DATABASE_SERVING_URL', Type.String({ pattern: '^postgres(ql)?://' }), (value) => value),
  /**
   * The privacy policy's current version (a short label such as `2026-11`). Unset, nothing asks for acceptance. Set,
   * registering through an invitation needs `privacy_policy_accepted: true`, and `me` says whether the signed-in person
   * accepted this version (POST /auth/me/privacy-policy/{version} records it).
   */
  privacyPolicyVersion: variable(
    'PRIVACY_POLICY_VERSION',
    Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$' }),
    (value) => value ?? null,
  ),
  /** A streaming replica for GET reads of CRM records (lists, searches, single records); see db/read-routing.ts. */
  databaseReplicaUrl: variable('DATABASE_REPLICA_URL', Type.String({ pattern: '^postgres(ql)?://' }), (value) => value),
  /**
   * Connections of each server process's pool (API requests; the email and automation workers open their own). Bounded
   * by what one PostgreSQL serves: every process opens up to this many, so WEB_CONCURRENCY × it must fit max_connections.
   */
  databasePoolSize: integer('DATABASE_POOL_SIZE', DEFAULT_DATABASE_POOL_SIZE, Type.String({ pattern: '^[1-9][0-9]{0,2}$' })),
  dataDir: variable('DATA_DIR', Type.String({ minLength: 1 }), (value) => path.resolve(value ?? '.data')),
  /** null when unset or shorter than 32 characters: setup is then unavailable. */
  setupToken: variable('SERVICE_SETUP_TOKEN', Type.String(), (value, { warnings }) => {
    if (value === undefined) return null;
    if (value.length >= 32) return value;
    warnings.push('SERVICE_SETUP_TOKEN is shorter than 32 characters: first-run setup is unavailable.');
    return null;
  }),
  appUrl: variable('SERVICE_APP_URL', Type.String({ pattern: '^https?://[^\\s]+$' }), (value) => {
    const url = (value ?? 'http://localhost:5173').replace(/\/+$/, '');
    // Its origin is a CORS origin (plugins/cors.ts): an unparsable URL stops the boot, not the app's first build.
    if (!URL.canParse(url)) throw new ConfigError(`SERVICE_APP_URL: not a URL (${url}).`);
    return url;
  }),
  /**
   * Browser origins, besides SERVICE_APP_URL's, allowed to call the API (CORS): exact origins separated by commas, or
   * `*` written on its own for any origin. Each must be `scheme://host[:port]`, nothing more.
   */
  corsOrigins: variable('CORS_ORIGINS', Type.String(), (value): readonly string[] | '*' => {
    if (value === undefined) return [];
    if (value.trim() === '*') return '*';
    return value.split(',').map((entry) => {
      const origin = entry.trim();
      let parsed: URL | undefined;
      try {
        parsed = new URL(origin);
      } catch {
        parsed = undefined;
      }
      // `https://*.example` parses as a host named `*.example`: no wildcard matches, so none is accepted.
      if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin || origin.includes('*')) {
        throw new ConfigError(`CORS_ORIGINS: "${origin}" is not an origin (scheme://host[:port], no path or trailing slash).`);
      }
      return origin;
    });
  }),
  /** Always set: production must provide it, server.ts generates one into DATA_DIR outside production. */
  jwtSecret: variable('JWT_SECRET', Type.String({ minLength: 32 }), (value, { nodeEnv }) => {
    if (value !== undefined) return value;
    throw new ConfigError(
      nodeEnv === 'production'
        ? 'JWT_SECRET is required when NODE_ENV=production (at least 32 characters).'
        : 'JWT_SECRET is required (at least 32 characters); outside production `npm start` generates one into DATA_DIR.',
    );
  }),
  /** 32-byte AES-256-GCM key, or null: SMTP passwords cannot be stored without it. */
  emailEncryptionKey: variable('EMAIL_ENCRYPTION_KEY', Type.String(), decodeEncryptionKey),
  accessTokenTtl: integer('ACCESS_TOKEN_TTL', 900),
  refreshTokenTtl: integer('REFRESH_TOKEN_TTL', 604_800),
  trustProxy: variable('TRUST_PROXY', Type.String(), parseTrustProxy),
  redisUrl: variable('REDIS_URL', Type.String({ pattern: '^rediss?://' }), (value) => value),
  /** Prometheus metrics: their own listener on HOST:port, and/or /metrics on the API port behind a Bearer token. */
  metrics: {
    port: variable('METRICS_PORT', PortNumber, (value) => (value === undefined ? null : Number(value))),
    token: variable('METRICS_TOKEN', Type.String({ minLength: 32 }), (value) => value ?? null),
  },
  logLevel: text(
    'LOG_LEVEL',
    'info',
    Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l))),
  ),
  webhookAllowPrivate: flag('AUTOMATION_WEBHOOK_ALLOW_PRIVATE'),
  /** Whether workspace email accounts may point at loopback/private hosts (the installation fallback always may). */
  smtpAllowPrivate: flag('EMAIL_SMTP_ALLOW_PRIVATE'),
  outboxPollIntervalMs: integer('OUTBOX_POLL_INTERVAL_MS', 2000),
  /**
   * Jobs each server process runs at once, per queue: emails (each may wait on an SMTP server for up to 10 s a
   * phase) and automation runs (a webhook may take its 5 s). The email runner holds a pool of this many plus 2
   * connections (its LISTEN and job fetches), the run dispatcher 3 whatever its concurrency; they count against
   * max_connections like DATABASE_POOL_SIZE.
   */
  workerConcurrency: {
    email: integer('EMAIL_WORKER_CONCURRENCY', 3, WorkerConcurrency),
    automation: integer('AUTOMATION_WORKER_CONCURRENCY', 10, WorkerConcurrency),
  },
  /**
   * On SIGTERM, how long /readyz answers 503 (and answers carry `Connection: close`) before the server stops accepting
   * connections and drains: long enough for a load balancer's health checks to take it out of rotation (two intervals).
   * Never less than half a second (server.ts, KEEPALIVE_HANDOFF_MS), so kept-alive connections are ended by an answer.
   */
  shutdownDelayMs: integer('SHUTDOWN_DELAY_MS', 0, Type.String({ pattern: '^[0-9]{1,6}$' })),
  /** A job locked this long by a worker whose process is gone (its liveness lock is free) is released to the others. */
  jobRecoverySeconds: integer('JOB_RECOVERY_SECONDS', 60),
  /** send_email automation messages one workspace may send per hour; beyond it runs end `skipped`. */
  automationEmailsPerHour: integer('AUTOMATION_EMAILS_PER_HOUR', 100),
  /** Open change streams (`GET …/events/` as text/event-stream) one workspace may hold, counted across instances. */
  eventStreamsPerWorkspace: integer('EVENT_STREAMS_PER_WORKSPACE', 100),
  /** Concurrent argon2 hashes, and how many more may wait before callers get 503. */
  passwordHashing: {
    concurrency: integer('PASSWORD_HASH_CONCURRENCY', 2),
    queue: integer('PASSWORD_HASH_QUEUE', 32, Type.String({ pattern: '^[0-9]{1,6}$' })),
  },
  /**
   * Server processes on the one port (node:cluster); 1 runs the server in the started process itself. Production uses
   * every core by default; development keeps one process (one log, one debugger target).
   */
  webConcurrency: integer('WEB_CONCURRENCY', ({ nodeEnv }) => (nodeEnv === 'production' ? availableParallelism() : 1)),
  rateLimits: {
    setup: rateLimit('RATE_LIMIT_SETUP_PER_MINUTE', 5, MINUTE),
    token: rateLimit('RATE_LIMIT_TOKEN_PER_MINUTE', 10, MINUTE),
    tokenPerIp: rateLimit('RATE_LIMIT_TOKEN_PER_IP_PER_MINUTE', 30, MINUTE),
    passwordChecks: rateLimit('RATE_LIMIT_PASSWORD_CHECKS_PER_HOUR', 10, HOUR),
    passwordReset: rateLimit('RATE_LIMIT_PASSWORD_RESET_PER_HOUR', 5, HOUR),
    invitations: rateLimit('RATE_LIMIT_INVITATIONS_PER_DAY', 20, DAY),
    provisioning: rateLimit('RATE_LIMIT_PROVISIONING_PER_DAY', 20, DAY),
    adminInvitations: rateLimit('RATE_LIMIT_ADMIN_INVITATIONS_PER_DAY', 10, DAY),
    testSends: rateLimit('RATE_LIMIT_TEST_SENDS_PER_HOUR', 60, HOUR),
  },
  /**
   * Request budgets of the workspace API (every route under /organizations/{organization_id}), counted after
   * authentication: per workspace (people and keys together), and per API key on top. One busy workspace or
   * integration then gets 429s instead of slowing every other workspace down. A workspace is a whole team and its
   * integrations: 12,000 a minute (200 a second) is what a few hundred people clicking through a front end ask, and
   * a small share of what one process answers, so a runaway loop takes at most that share from its neighbours (the
   * measurements behind both numbers: docs/benchmarks.md, Workspace request budget).
   */
  requestBudgets: {
    workspace: rateLimit('RATE_LIMIT_WORKSPACE_PER_MINUTE', 12_000, MINUTE),
    apiKey: rateLimit('RATE_LIMIT_API_KEY_PER_MINUTE', 600, MINUTE),
  },
  /** Ages past which the backup status reads `stale`: the last successful backup, and the last restore test. */
  backup: {
    maxAgeHours: integer('BACKUP_MAX_AGE_HOURS', 26),
    restoreTestMaxAgeDays: integer('RESTORE_TEST_MAX_AGE_DAYS', 8),
  },
  /** Admin console sessions: idle timeout and absolute lifetime, in seconds. */
  adminSession: {
    idleSeconds: integer('ADMIN_SESSION_IDLE_SECONDS', 1800),
    maxSeconds: integer('ADMIN_SESSION_MAX_SECONDS', 43_200),
  },
} satisfies VariableTree;
type Resolved<D> = D extends Variable<infer T> ? T : { [K in keyof D]: Resolved<D[K]> };

/** Read-only all the way down; a Buffer stays a Buffer (its bytes cannot be frozen, see deepFreeze). */
export type DeepReadonly<T> = T extends Buffer | ((...args: never[]) => unknown)
  ? T
  : T extends readonly (infer U)[]
    ? readonly DeepReadonly<U>[]
    : T extends object
      ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
      : T;

export type Config = DeepReadonly<
  Resolved<typeof variables> & {
    /** Problems that do not stop the boot but that an operator must see in the log. */
    warnings: string[];
  }
>;

const isVariable = (node: Variable<unknown> | VariableTree): node is Variable<unknown> => typeof node.read === 'function';

function leaves(tree: VariableTree): Variable<unknown>[] {
  return Object.values(tree).flatMap((node) => (isVariable(node) ? [node] : leaves(node)));
}

/** The environment variables of a tree as one TypeBox object: every one optional, unknown ones ignored. */
function envSchema(tree: VariableTree): TObject {
  return Type.Object(Object.fromEntries(leaves(tree).map(({ env, schema }) => [env, Type.Optional(schema)])));
}

/** The accepted environment, derived from the table. */
export const EnvSchema = envSchema(variables);

/** The variables of `schema` that are set (empty strings count as unset, as in most .env tooling), all valid or a ConfigError. */
function validate(schema: TObject, source: Record<string, string | undefined>): Record<string, string> {
  const env = Object.fromEntries(
    Object.keys(schema.properties)
      .filter((key) => source[key] !== undefined && source[key] !== '')
      .map((key) => [key, source[key] as string]),
  );
  const errors = [...Value.Errors(schema, env)];
  if (errors.length > 0) {
    const lines = errors.map((e) => `${e.path.slice(1) || '(env)'}: ${e.message}`);
    throw new ConfigError(`Invalid environment:\n  ${[...new Set(lines)].join('\n  ')}`);
  }
  return env;
}

function resolve<D extends VariableTree>(tree: D, env: Record<string, string>, warnings: string[]): Resolved<D> {
  const context: Context = { nodeEnv: NODE_ENV.read(env.NODE_ENV), warnings };
  const walk = (node: VariableTree): Record<string, unknown> =>
    Object.fromEntries(
      Object.entries(node).map(([field, child]) => [field, isVariable(child) ? child.read(env[child.env], context) : walk(child)]),
    );
  return walk(tree) as Resolved<D>;
}

/**
 * Freezes an object and everything it holds. Buffers are left as they are: Object.freeze refuses typed arrays with
 * elements, and the one here (the email key) is a private copy decoded from the environment.
 */
function deepFreeze<T>(value: T): DeepReadonly<T> {
  if (typeof value === 'object' && value !== null && !ArrayBuffer.isView(value) && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value as DeepReadonly<T>;
}

/** Validates, converts and freezes the environment: a pure function of `source`, which writes nothing (see development-secrets.ts). */
export function loadConfig(source: Record<string, string | undefined>): Config {
  const warnings: string[] = [];
  const settings = resolve(variables, validate(EnvSchema, source), warnings);
  // The one rule across variables.
  if (settings.webConcurrency > 1 && !settings.redisUrl) {
    warnings.push(
      `WEB_CONCURRENCY=${settings.webConcurrency} without REDIS_URL: each process counts rate limits on its own, ` +
        `so a client gets up to ${settings.webConcurrency} times each limit.`,
    );
  }
  return deepFreeze({ ...settings, warnings });
}

const bootstrap = { nodeEnv: variables.nodeEnv, dataDir: variables.dataDir } satisfies VariableTree;

/** NODE_ENV and DATA_DIR as loadConfig reads them, for what must happen before it: generating development secrets. */
export function loadBootstrapConfig(source: Record<string, string | undefined>): Pick<Config, 'nodeEnv' | 'dataDir'> {
  return deepFreeze(resolve(bootstrap, validate(envSchema(bootstrap), source), []));
}

/** Where a session of its own is needed (migrations, job queue, advisory locks): PostgreSQL itself, never the pooler. */
export const sessionDatabaseUrl = (config: Pick<Config, 'databaseUrl' | 'databaseDirectUrl'>): string | undefined =>
  config.databaseDirectUrl ?? config.databaseUrl;

/**
 * The same config on another database: server.ts calls it once the embedded PostgreSQL runs. A new frozen object,
 * so the config loaded at boot is never changed.
 */
export function withDatabaseUrl(config: Config, databaseUrl: string, databaseServingUrl?: string): Config {
  for (const url of [databaseUrl, databaseServingUrl ?? databaseUrl]) {
    if (!Value.Check(variables.databaseUrl.schema, url)) throw new ConfigError('DATABASE_URL: not a postgres:// URL');
  }
  return deepFreeze({ ...config, databaseUrl, databaseServingUrl: databaseServingUrl ?? config.databaseServingUrl });
}

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
  }
}
