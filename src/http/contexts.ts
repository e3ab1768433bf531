// The API's authentication contexts: where a route is registered decides who may call it, and what its OpenAPI operation says.
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest, FastifySchema, preHandlerAsyncHookHandler, RouteOptions } from 'fastify';
import { assertInstallationAdmin } from '../lib/current-user.js';
import { BUDGET_HEADERS, problemResponse } from '../lib/http-schemas.js';
import { requireUser } from './request.js';
import { bearerCredential } from '../plugins/auth.js';
import { hashApiKey, looksLikeApiKey } from '../lib/api-key-format.js';

/**
 * `public`: anyone; `user`: a valid access token; `installation`: an installation administrator's access token;
 * `tenant`: a member of the organization in the path; `console`: a staff session.
 */
export type AuthContext = 'public' | 'user' | 'installation' | 'tenant' | 'console';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set by the context a route is registered in (never by the route): what the route-walk test checks. */
    authContext?: AuthContext;
    /** Public routes only: authenticate the caller when an Authorization header is sent (invitation accept). */
    identifyUser?: boolean;
    /** Tenant routes only: how many requests this one counts as in the request budgets (a batch: its operations). */
    budgetWeight?: (request: FastifyRequest) => number;
  }
}

const BEARER = [{ bearerAuth: [] }];
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Why a caller of a context is refused before the route runs, and with which `code`: what each status says in the document. */
const NO_USER = 'No access token, or one that is invalid, expired or revoked (`not_authenticated`, `token_not_valid`).';
const KEY_REFUSED = 'A workspace API key was sent to an operation that needs a signed-in user (`api_key_not_allowed`).';
const TICKET_REFUSED = 'A `ticket` that is unknown, used, expired, or whose holder lost access (`ticket_not_valid`).';
const REFUSALS = {
  user: { 401: NO_USER, 403: KEY_REFUSED },
  installation: {
    401: NO_USER,
    403: `The caller is not an installation administrator (\`installation_admin_required\`). ${KEY_REFUSED}`,
  },
  tenant: {
    401:
      'No credential, or an access token or workspace API key that is invalid, expired or revoked (`not_authenticated`, ' +
      '`token_not_valid`, `api_key_not_valid`).',
    403:
      "The caller's role or API key lacks the capability the operation needs (`permission_denied`); the workspace requires " +
      'two-factor sign-in of a member who has not turned it on (`two_factor_required`); or an API key was sent to an ' +
      'operation keys may not call (`api_key_not_allowed`).',
    404: 'The workspace does not exist, or the caller is not its member or its API key (`organization_not_found`).',
  },
} satisfies Record<string, Record<number, string>>;

/**
 * Adds the problem responses a context can answer before the route runs, each saying why and with which code. A
 * status the route declares itself keeps its own meaning, and the context's is added to it.
 */
function addResponses(route: RouteOptions, refusals: Record<number, string>): void {
  const schema = route.schema;
  if (!schema?.response) return;
  const response = schema.response as Record<number, { description?: string }>;
  for (const [key, reason] of Object.entries(refusals)) {
    const status = Number(key);
    const own = response[status];
    const generic = problemResponse(status).description;
    response[status] =
      own === undefined || own.description === generic
        ? { ...(own ?? problemResponse(status)), description: reason }
        : { ...own, description: `${own.description} ${reason}` };
  }
}

/**
 * Adds a hook of the route's own, decided when the route is registered: route hooks run after the context's, and
 * cost nothing on the routes that do not need them (reading `request.routeOptions` builds an object per request).
 */
function appendOnRequest(route: RouteOptions, hook: (request: FastifyRequest) => Promise<void>): void {
  const own = route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
  route.onRequest = [...own, hook] as RouteOptions['onRequest'];
}

function appendPreHandler(route: RouteOptions, hook: preHandlerAsyncHookHandler): void {
  const own = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler];
  route.preHandler = [...own, hook] as RouteOptions['preHandler'];
}

/** Marks every route registered below with its context (and what it means for the OpenAPI document). */
function markRoutes(scope: FastifyInstance, context: AuthContext, document: (route: RouteOptions, schema: FastifySchema) => void): void {
  scope.addHook('onRoute', (route) => {
    route.config = { ...route.config, authContext: context };
    route.schema ??= {};
    // Fastify parses a body on these methods, declared or not: an oversized or non-JSON one is refused before the
    // handler runs, whatever the context.
    const response = route.schema.response as Record<number, unknown> | undefined;
    if (response && [route.method].flat().some((method) => BODY_METHODS.has(method))) {
      for (const status of [413, 415]) response[status] ??= problemResponse(status);
    }
    document(route, route.schema);
  });
}

/** Routes anyone may call; `config.identifyUser` makes one also accept (and verify) a Bearer token. */
export function publicContext(routes: FastifyPluginAsync[]): FastifyPluginAsync {
  return async (scope) => {
    markRoutes(scope, 'public', (route, schema) => {
      if (!route.config?.identifyUser) return;
      schema.security = [{}, ...BEARER];
      addResponses(route, REFUSALS.user);
      appendOnRequest(route, scope.authenticateOptional);
    });
    for (const plugin of routes) await scope.register(plugin);
  };
}

/** Routes of a signed-in user: a valid access token of an active user with a live session, or 401. */
export function userContext(routes: FastifyPluginAsync[]): FastifyPluginAsync {
  return async (scope) => {
    markRoutes(scope, 'user', (route, schema) => {
      schema.security = BEARER;
      addResponses(route, REFUSALS.user);
    });
    scope.addHook('onRequest', scope.authenticate);
    for (const plugin of routes) await scope.register(plugin);
  };
}

/** Routes of installation administrators: a valid access token (401) of an installation administrator (403). */
export function installationContext(routes: FastifyPluginAsync[]): FastifyPluginAsync {
  return async (scope) => {
    markRoutes(scope, 'installation', (route, schema) => {
      schema.security = BEARER;
      addResponses(route, REFUSALS.installation);
    });
    scope.addHook('onRequest', scope.authenticate);
    scope.addHook('onRequest', async (request) => assertInstallationAdmin(requireUser(request), 'use the installation API'));
    for (const plugin of routes) await scope.register(plugin);
  };
}

/**
 * Routes under `/organizations/:organization_id`: the caller must be a member of that active organization (404
 * otherwise, whatever the reason) and have the capability the route names in `config.access` (403). A route that
 * names none fails at startup, so forgetting it can never make a route more open.
 */
export function tenantContext(routes: FastifyPluginAsync[]): FastifyPluginAsync {
  return async (scope) => {
    markRoutes(scope, 'tenant', (route, schema) => {
      const access = route.config?.access;
      if (access === undefined) throw new Error(`tenant route ${String(route.method)} ${route.url} declares no config.access`);
      schema.security = [
        ...BEARER,
        ...(route.config?.apiKeys ? [{ apiKeyAuth: [] }] : []),
        ...(route.config?.streamTickets ? [{ streamTicket: [] }] : []),
      ];
      if (route.config?.streamTickets) addResponses(route, { 401: TICKET_REFUSED });
      // Every tenant route can refuse with 403: a workspace that requires two-factor, or a key where keys may not go.
      addResponses(route, REFUSALS.tenant);
      addBudgetResponse(route);
      // The route's own hook, bound to its capability now (route hooks run after the context's resolveTenant),
      // rather than a context hook reading the route's options on every request.
      if (access !== 'member') appendOnRequest(route, scope.capabilityCheck(access));
      const weight = route.config?.budgetWeight;
      if (weight) appendPreHandler(route, chargeRest(weight));
    });
    // After authentication: only a workspace's members and keys can spend its budget.
    const { workspace, apiKey } = scope.config.requestBudgets;
    const budgets = scope.requestBudgets(
      [
        {
          name: 'workspace',
          max: workspace.max,
          windowMs: workspace.timeWindowMs,
          key: (request) => request.tenant?.organization.id ?? null,
        },
        { name: 'api-key', max: apiKey.max, windowMs: apiKey.timeWindowMs, key: (request) => request.apiKey?.id ?? null },
      ],
      { scope: workspaceInPath, caller: (request) => credentialIdentity(scope, request) },
    );
    /**
     * A request that counts as several (its body read, hence a preHandler) is charged the rest after onRequest charged
     * one: every charge counts even when a budget runs out midway, as a refused request counts.
     */
    const chargeRest =
      (weight: (request: FastifyRequest) => number): preHandlerAsyncHookHandler =>
      async (request, reply) => {
        for (let charged = 1; charged < weight(request); charged += 1) await budgets.charge.call(scope, request, reply);
      };
    // Before authentication, a caller refused here a moment ago is refused again without touching the database.
    scope.addHook('onRequest', budgets.early);
    scope.addHook('onRequest', scope.resolveTenant);
    scope.addHook('onRequest', budgets.charge);
    for (const plugin of routes) await scope.register(plugin);
  };
}

/** The workspace id in a tenant path, lower-cased as resolveTenant compares it. */
const workspaceInPath = (request: FastifyRequest): string | null =>
  (request.params as { organization_id?: string }).organization_id?.toLowerCase() ?? null;

/**
 * Who sends a request, from its credential alone (no database): a key's SHA-256, or a verified access token's user. Null
 * when it has none or an invalid one (authentication then answers as usual).
 */
function credentialIdentity(app: FastifyInstance, request: FastifyRequest): string | null {
  const credential = bearerCredential(request);
  if (!credential) return null;
  if (looksLikeApiKey(credential)) return `key:${hashApiKey(credential).toString('base64')}`;
  try {
    return `user:${app.accessClaims(request).sub}`;
  } catch {
    return null;
  }
}

/** Every tenant route can answer 429 with the budget headers (merged into a 429 the route declares for a preset of its own). */
function addBudgetResponse(route: RouteOptions): void {
  const response = route.schema?.response as Record<number, { headers?: Record<string, unknown> }> | undefined;
  if (!response) return;
  const own = response[429] ?? problemResponse(429);
  response[429] = { ...own, headers: { ...own.headers, ...BUDGET_HEADERS } };
}

export const TENANT_PREFIX = '/organizations/:organization_id';
