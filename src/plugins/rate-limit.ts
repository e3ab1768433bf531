// Named rate-limit presets (`app.rateLimitPreset(name)` → preHandler), keyed by actor, shared through Redis if set.
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import { Redis } from 'ioredis';
import type { FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { Config } from '../config.js';

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

export default fp(
  async (app) => {
    const redis = app.config.redisUrl
      ? new Redis(app.config.redisUrl, { connectTimeout: 1000, maxRetriesPerRequest: 1, lazyConnect: false })
      : undefined;
    if (redis) app.addHook('onClose', async () => void (await redis.quit()));
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
      const options = { max: setting.max, timeWindow: setting.timeWindowMs, keyGenerator: (request: FastifyRequest) => `${name}|${keyGenerators[name](request)}` };
      presets.set(name, STACKABLE.has(name) ? stackable(app.createRateLimit(options)) : (app.rateLimit(options) as preHandlerAsyncHookHandler));
    }
    app.decorate('rateLimitPreset', (name: RateLimitPresetName) => presets.get(name)!);
  },
  { name: 'rate-limit', dependencies: ['auth'] },
);

declare module 'fastify' {
  interface FastifyInstance {
    rateLimitPreset: (name: RateLimitPresetName) => preHandlerAsyncHookHandler;
  }
}
