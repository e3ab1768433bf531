// Named rate-limit presets (`app.rateLimitPreset(name)` → preHandler), keyed by actor, shared through Redis if set.
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import { Redis } from 'ioredis';
import type { FastifyRequest, onRequestAsyncHookHandler, preHandlerAsyncHookHandler } from 'fastify';
import type { Config } from '../config.js';
import { serviceUnavailable, tooManyRequests } from '../lib/problem.js';

export type RateLimitPresetName = keyof Config['rateLimits'];

const byIp = (request: FastifyRequest) => `ip:${request.ip}`;
const byActor = (request: FastifyRequest) => (request.currentUser ? `user:${request.currentUser.id}` : byIp(request));

const keyGenerators: Record<RateLimitPresetName, (request: FastifyRequest) => string> = {
  setup: byIp,
  // Per IP and username, so one attacker cannot lock every account and one account cannot be brute-forced.
  token: (request) => {
    const body = request.body as { username?: unknown } | undefined;
    const username = typeof body?.username === 'string' ? body.username.toLowerCase() : '';
    return `${byIp(request)}|${username}`;
  },
  // Per IP alone as well: rotating usernames would otherwise buy a fresh budget of argon2 hashes per name.
  tokenPerIp: byIp,
  passwordReset: byIp,
  // Per user: a stolen access token must not become an oracle for the current password.
  passwordChecks: byActor,
  invitations: byActor,
  provisioning: byActor,
  adminInvitations: byActor,
  // Test sends deliver real mail and webhook calls at once: a loop must not turn the API into a relay.
  testSends: byActor,
};

/**
 * With REDIS_URL set and Redis unreachable, these presets fail closed (503, the request is not served): they are the
 * brute-force and hashing guards, and a limiter that silently stops counting is what an attacker would wait for.
 * Every other preset fails open (the request is served uncounted, and a warning is logged).
 */
const FAIL_CLOSED: ReadonlySet<RateLimitPresetName> = new Set(['setup', 'token', 'tokenPerIp', 'passwordReset', 'passwordChecks']);

const limiterUnavailable = () =>
  serviceUnavailable('rate_limiter_unavailable', 'The rate limiter is unavailable; try again shortly.', { 'retry-after': '5' });

/** Presets that run beside another one on the same route (the plugin's own handler runs only once per request). */
const STACKABLE: ReadonlySet<RateLimitPresetName> = new Set(['tokenPerIp']);

type Limiter = (request: FastifyRequest) => Promise<{ isAllowed: true } | { isAllowed: false; isExceeded: boolean; ttlInSeconds: number }>;

/** A preHandler answering 429 with `Retry-After` like the plugin's own, built on a limiter that can be stacked. */
function stackable(limiter: Limiter): preHandlerAsyncHookHandler {
  return async (request, reply) => {
    const result = await limiter(request);
    if (result.isAllowed || !result.isExceeded) return;
    reply.header('retry-after', String(result.ttlInSeconds));
    throw Object.assign(new Error(`Rate limit exceeded, retry in ${result.ttlInSeconds} seconds.`), { statusCode: 429 });
  };
}

/** A store failure (anything but the limiter's own 429) becomes a 503 problem instead of an opaque 500. */
function failingClosed(handler: preHandlerAsyncHookHandler): preHandlerAsyncHookHandler {
  return async function (this: unknown, request, reply) {
    try {
      await handler.call(this as never, request, reply);
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 429) throw error;
      request.log.warn({ err: { message: (error as Error).message } }, 'rate limiter unavailable: request refused');
      throw limiterUnavailable();
    }
  };
}

export default fp(
  async (app) => {
    // No offline queue and a command timeout: while Redis is away a counter fails within a second instead of
    // holding the request; ioredis keeps reconnecting in the background, so counting resumes when Redis is back.
    const redis = app.config.redisUrl
      ? new Redis(app.config.redisUrl, { connectTimeout: 1000, commandTimeout: 1000, maxRetriesPerRequest: 1, enableOfflineQueue: false })
      : undefined;
    if (redis) {
      let lastWarning = 0;
      redis.on('error', (error: Error) => {
        // Reconnection attempts repeat the same error; one line every ten seconds is enough to see the outage.
        if (Date.now() - lastWarning < 10_000) return;
        lastWarning = Date.now();
        app.log.warn({ err: { message: error.message } }, 'rate limiter: Redis unreachable');
      });
      // Serve only once the counters are reachable (or after five seconds, then failing closed/open as below):
      // without the offline queue, requests in the first milliseconds would otherwise meet a connecting client.
      app.addHook('onReady', async () => {
        if (redis.status === 'ready') return;
        let timer: NodeJS.Timeout | undefined;
        // Not events.once: it rejects on the first 'error', and a slow first connection (a timed-out ready check)
        // must not fail the start; ioredis keeps trying, and the requests fail closed/open until it is ready.
        const ready = new Promise<void>((resolve) => redis.once('ready', () => resolve()));
        await Promise.race([ready, new Promise((resolve) => (timer = setTimeout(resolve, 5_000)))]);
        clearTimeout(timer);
        if ((redis.status as string) !== 'ready') app.log.warn('rate limiter: Redis not reachable at start');
      });
      app.addHook('onClose', async () => {
        await redis.quit().catch(() => redis.disconnect());
      });
    }
    await app.register(rateLimit, {
      global: false,
      ...(redis ? { redis, nameSpace: 'crm-rate-limit:' } : {}),
      errorResponseBuilder: (_request, context) =>
        Object.assign(new Error(`Rate limit exceeded, retry in ${context.after}.`), { statusCode: 429 }),
    });
    const presets = new Map<RateLimitPresetName, preHandlerAsyncHookHandler>();
    for (const name of Object.keys(keyGenerators) as RateLimitPresetName[]) {
      const setting = app.config.rateLimits[name];
      // Prefixed with the preset: the Redis store keeps every preset in one key space.
      const failClosed = FAIL_CLOSED.has(name);
      const options = {
        max: setting.max,
        timeWindow: setting.timeWindowMs,
        keyGenerator: (request: FastifyRequest) => `${name}|${keyGenerators[name](request)}`,
        skipOnError: !failClosed,
      };
      const handler = STACKABLE.has(name)
        ? stackable(app.createRateLimit(options))
        : (app.rateLimit(options) as preHandlerAsyncHookHandler);
      presets.set(name, failClosed ? failingClosed(handler) : handler);
    }
    app.decorate('requestBudgets', (policies: readonly BudgetPolicy[], recall: BudgetRecall) => {
      const limiters = policies.map((policy) => ({
        policy,
        // Fails open (skipOnError): a budget protects the neighbours' latency, not secrets; a Redis outage serves uncounted.
        limit: app.createRateLimit({
          max: policy.max,
          timeWindow: policy.windowMs,
          keyGenerator: (request) => `budget|${policy.name}|${policy.key(request)}`,
          skipOnError: true,
        }),
      }));
      const refusals = new RefusalMemory();
      const policyHeader = (applying: readonly BudgetPolicy[]) =>
        applying.map((p) => `"${p.name}";q=${p.max};w=${Math.round(p.windowMs / 1000)}`).join(', ');
      const refuse = (exceeded: readonly { name: string; seconds: number }[]) => {
        const wait = Math.max(1, ...exceeded.map((s) => s.seconds));
        return tooManyRequests(
          'request_budget_exceeded',
          `The ${exceeded.map((s) => s.name).join(' and ')} request budget is used up; retry in ${wait} seconds.`,
          { 'retry-after': String(wait) },
        );
      };

      /**
       * Before authentication: a caller this process refused in this scope a moment ago is refused again at once, until
       * the window it exhausted ends, with no database work (a flood's 429s must not cost its neighbours their latency).
       * Only a caller that already passed authentication here can be in the memory, so a stranger learns nothing.
       */
      const early: onRequestAsyncHookHandler = async (request, reply) => {
        const scope = recall.scope(request);
        if (scope === null || !refusals.has(scope)) return;
        const caller = recall.caller(request);
        const known = caller === null ? undefined : refusals.get(scope, caller);
        if (!known) return;
        reply.header('ratelimit-policy', known.policyHeader);
        reply.header('ratelimit', known.exceeded.map((s) => `"${s.name}";r=0;t=${s.seconds}`).join(', '));
        throw refuse(known.exceeded);
      };

      const charge: onRequestAsyncHookHandler = async (request, reply) => {
        const applying = limiters.filter(({ policy }) => policy.key(request) !== null);
        if (applying.length === 0) return;
        // Every budget is charged (in parallel: one round trip to Redis each), so a refused request still counts everywhere.
        const results = await Promise.all(applying.map(async ({ policy, limit }) => ({ policy, result: await limit(request) })));
        const states = results.map(({ policy, result }) =>
          result.isAllowed
            ? { policy, remaining: policy.max, seconds: 0, exceeded: false }
            : { policy, remaining: result.remaining, seconds: result.ttlInSeconds, exceeded: result.isExceeded },
        );
        const header = policyHeader(applying.map(({ policy }) => policy));
        reply.header('ratelimit-policy', header);
        reply.header('ratelimit', states.map((s) => `"${s.policy.name}";r=${s.remaining};t=${s.seconds}`).join(', '));
        const exceeded = states.filter((s) => s.exceeded).map((s) => ({ name: s.policy.name, seconds: s.seconds }));
        if (exceeded.length === 0) return;
        const scope = recall.scope(request);
        const caller = recall.caller(request);
        if (scope !== null && caller !== null) refusals.remember(scope, caller, { policyHeader: header, exceeded });
        throw refuse(exceeded);
      };
      return { early, charge };
    });
    app.decorate('rateLimitPreset', (name: RateLimitPresetName) => {
      const preset = presets.get(name);
      if (!preset) throw new Error(`unknown rate-limit preset ${name}`);
      return preset;
    });
  },
  { name: 'rate-limit', dependencies: ['auth'] },
);

/** How a budget tells, before authentication and without database work, where a request goes and who sends it. */
export interface BudgetRecall {
  /** Where the request spends (e.g. the workspace in its path), or null. */
  scope: (request: FastifyRequest) => string | null;
  /** Who sends it, from its credential alone (e.g. a verified token's subject, a key's hash), or null. */
  caller: (request: FastifyRequest) => string | null;
}

interface Refusal {
  policyHeader: string;
  exceeded: { name: string; seconds: number }[];
}

/**
 * The budget refusals of this process, per scope and caller, until the exhausted window ends. Bounded: past
 * MAX_REMEMBERED scopes it starts afresh (forgetting only costs the full check again).
 */
class RefusalMemory {
  static readonly MAX_REMEMBERED = 10_000;
  private readonly scopes = new Map<string, Map<string, { until: number; refusal: Refusal }>>();

  has(scope: string): boolean {
    return this.scopes.has(scope);
  }

  /** The refusal still in force, with the seconds left; an ended one is forgotten. */
  get(scope: string, caller: string): Refusal | undefined {
    const callers = this.scopes.get(scope);
    const entry = callers?.get(caller);
    if (!callers || !entry) return undefined;
    const left = Math.ceil((entry.until - Date.now()) / 1000);
    if (left <= 0) {
      callers.delete(caller);
      if (callers.size === 0) this.scopes.delete(scope);
      return undefined;
    }
    return { ...entry.refusal, exceeded: entry.refusal.exceeded.map((s) => ({ name: s.name, seconds: left })) };
  }

  remember(scope: string, caller: string, refusal: Refusal): void {
    if (!this.scopes.has(scope) && this.scopes.size >= RefusalMemory.MAX_REMEMBERED) this.scopes.clear();
    const seconds = Math.min(...refusal.exceeded.map((s) => s.seconds));
    if (!(seconds > 0)) return;
    const callers = this.scopes.get(scope) ?? new Map<string, { until: number; refusal: Refusal }>();
    callers.set(caller, { until: Date.now() + seconds * 1000, refusal });
    this.scopes.set(scope, callers);
  }
}

/** One request budget: `max` requests per `windowMs` per key; a request whose key is null is not counted against it. */
export interface BudgetPolicy {
  /** Its name in the RateLimit-Policy / RateLimit headers. */
  name: string;
  max: number;
  windowMs: number;
  key: (request: FastifyRequest) => string | null;
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * `charge`: an onRequest hook charging each policy that applies and sending the IETF `RateLimit-Policy` and `RateLimit`
     * headers (draft-ietf-httpapi-ratelimit-headers); over any budget, 429 `request_budget_exceeded` with `Retry-After`.
     * `early`: an onRequest hook to run before authentication, refusing at once a caller `charge` refused in the same
     * scope until that window ends.
     */
    requestBudgets: (
      policies: readonly BudgetPolicy[],
      recall: BudgetRecall,
    ) => { early: onRequestAsyncHookHandler; charge: onRequestAsyncHookHandler };
    rateLimitPreset: (name: RateLimitPresetName) => preHandlerAsyncHookHandler;
  }
}
