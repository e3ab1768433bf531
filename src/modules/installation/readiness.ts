// The production-readiness checks: a pure function of the config and a few facts read at request time, never a value.
import type { Config } from '../../config.js';

/** What the checks need besides the config, gathered by the service (database) and the route (the request). */
export interface ReadinessFacts {
  /** The request reached the service as HTTPS (directly, or as X-Forwarded-Proto from a trusted proxy). */
  servedOverHttps: boolean;
  /** The request carried X-Forwarded-* headers that TRUST_PROXY makes the service ignore. */
  forwardedButUntrusted: boolean;
  installationSmtpConfigured: boolean;
  pendingMigrations: number;
  setupCompleted: boolean;
  /** The role of workspace requests escapes row-level security (a superuser or BYPASSRLS). */
  rowSecurityBypassed: boolean;
}

export interface ReadinessCheck {
  key: string;
  status: 'pass' | 'fail';
  guidance: string;
}

/** Keys in the order the answer lists them; part of the contract (monitoring scripts match on them). */
export const READINESS_KEYS = [
  'node_env_production',
  'jwt_secret_strong',
  'app_url_https',
  'served_over_https',
  'trust_proxy',
  'console_cookies_secure',
  'email_encryption_key',
  'installation_smtp',
  'redis_for_processes',
  'migrations_applied',
  'row_level_security',
  'metrics_not_public',
  'setup_token_removed',
] as const;

type Key = (typeof READINESS_KEYS)[number];

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

/** A secret that a person typed rather than generated: short, or made of few distinct characters. */
const strongSecret = (secret: string) => secret.length >= 32 && new Set(secret).size >= 16;

/** Each check: whether it passes, and what to do when it does not (variable names only). */
function evaluate(config: Config, facts: ReadinessFacts): Record<Key, { pass: boolean; guidance: string }> {
  const production = config.nodeEnv === 'production';
  return {
    node_env_production: {
      pass: production,
      guidance: 'Set NODE_ENV=production: it enforces JWT_SECRET, secure console cookies and uses every CPU.',
    },
    jwt_secret_strong: {
      pass: strongSecret(config.jwtSecret),
      guidance: 'Set JWT_SECRET to a random value of at least 32 characters (e.g. `openssl rand -base64 48`).',
    },
    app_url_https: {
      pass: config.appUrl.startsWith('https://'),
      guidance: "Set SERVICE_APP_URL to the front end's https:// origin: emailed links carry tokens.",
    },
    served_over_https: {
      pass: facts.servedOverHttps,
      guidance:
        'Serve the API over HTTPS (a TLS-terminating proxy, with TRUST_PROXY set so X-Forwarded-Proto counts): ' +
        'Strict-Transport-Security is sent on every answer but only takes effect over HTTPS.',
    },
    trust_proxy: {
      pass: !facts.forwardedButUntrusted,
      guidance:
        "Requests arrive with X-Forwarded-* headers but TRUST_PROXY is off: set TRUST_PROXY to the proxy's " +
        'addresses (or hop count) so client addresses, rate limits and HTTPS detection are right.',
    },
    console_cookies_secure: {
      pass: production,
      guidance: "Set NODE_ENV=production: the console's session cookie is marked Secure only then.",
    },
    email_encryption_key: {
      pass: config.emailEncryptionKey !== null,
      guidance: 'Set EMAIL_ENCRYPTION_KEY (base64 of 32 bytes): without it no SMTP password or webhook secret can be stored.',
    },
    installation_smtp: {
      pass: facts.installationSmtpConfigured,
      guidance: 'Configure the installation fallback SMTP account (at setup): invitations and password resets need it.',
    },
    redis_for_processes: {
      pass: config.webConcurrency === 1 || config.redisUrl !== undefined,
      guidance: 'Set REDIS_URL when WEB_CONCURRENCY is above 1 (or several instances run): rate limits are shared through it.',
    },
    migrations_applied: {
      pass: facts.pendingMigrations === 0,
      guidance: 'Apply the pending database migrations (`prisma migrate deploy`, or restart the service).',
    },
    row_level_security: {
      pass: !facts.rowSecurityBypassed,
      guidance:
        'Workspace requests run as a database role that bypasses row-level security (a superuser or BYPASSRLS): ' +
        'create a serving role without BYPASSRLS and set DATABASE_SERVING_URL to it (docs/tenant-isolation.md).',
    },
    metrics_not_public: {
      pass: config.metrics.port === null || LOOPBACK.test(config.host),
      guidance:
        'METRICS_PORT listens on HOST, which is not a loopback address: unset METRICS_PORT and use METRICS_TOKEN, ' +
        'or firewall that port from everything but monitoring.',
    },
    setup_token_removed: {
      pass: !(facts.setupCompleted && config.setupToken !== null),
      guidance: 'Setup is complete: remove SERVICE_SETUP_TOKEN from the environment.',
    },
  };
}

/** The checks in their fixed order, with the summary counts. */
export function readinessReport(config: Config, facts: ReadinessFacts) {
  const results = evaluate(config, facts);
  const checks: ReadinessCheck[] = READINESS_KEYS.map((key) => ({
    key,
    status: results[key].pass ? 'pass' : 'fail',
    guidance: results[key].guidance,
  }));
  const passed = checks.filter((check) => check.status === 'pass').length;
  return { ready: passed === checks.length, passed, total: checks.length, checks };
}
