// Builds the Fastify application from a validated config: plugins first, then the route modules. No I/O of its own.
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions, type RouteOptions } from 'fastify';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from './config.js';
import { redactUrl } from './lib/log-redaction.js';
import { configurePasswordHashing } from './lib/passwords.js';
import errorsPlugin, { renderClientError, renderError } from './plugins/errors.js';
import storableTextPlugin from './plugins/storable-text.js';
import securityHeadersPlugin from './plugins/security-headers.js';
import corsPlugin from './plugins/cors.js';
import compressionPlugin from './plugins/compression.js';
import dbPlugin from './plugins/db.js';
import readReplicaPlugin from './plugins/read-replica.js';
import authPlugin from './plugins/auth.js';
import rateLimitPlugin from './plugins/rate-limit.js';
import openapiPlugin from './plugins/openapi.js';
import { webhooksDocument } from './modules/automations/webhook-events.js';
import metricsPlugin from './plugins/metrics.js';
import idempotencyPlugin from './plugins/idempotency.js';
import tenancyPlugin from './plugins/tenancy.js';
import * as health from './modules/health/routes.js';
import * as auth from './modules/auth/routes.js';
import * as account from './modules/account/routes.js';
import * as setup from './modules/setup/routes.js';
import * as organizations from './modules/organizations/routes.js';
import * as invitations from './modules/invitations/routes.js';
import * as installationAdmins from './modules/installation-admins/routes.js';
import * as members from './modules/members/routes.js';
import * as emailAccounts from './modules/email-accounts/routes.js';
import * as companies from './modules/companies/routes.js';
import * as contacts from './modules/contacts/routes.js';
import * as deals from './modules/deals/routes.js';
import * as tasks from './modules/tasks/routes.js';
import * as notes from './modules/notes/routes.js';
import * as views from './modules/views/routes.js';
import * as customFields from './modules/custom-fields/routes.js';
import * as automations from './modules/automations/routes.js';
import * as imports from './modules/imports/routes.js';
import * as deletions from './modules/deletions/routes.js';
import * as events from './modules/events/routes.js';
import * as apiKeys from './modules/api-keys/routes.js';
import * as sessions from './modules/sessions/routes.js';
import * as twoFactor from './modules/two-factor/routes.js';
import * as installation from './modules/installation/routes.js';
import { COMPONENT_SCHEMAS } from './http/components.js';
import { installationContext, publicContext, TENANT_PREFIX, tenantContext, userContext } from './http/contexts.js';
import { composeServices } from './services.js';
import { startJobWorkers } from './workers.js';
import consolePlugin from './console/plugin.js';

export type App = FastifyInstance;

/**
 * Two validators: query/path values are strings on the wire and get coerced; JSON bodies must have exact types. Both
 * know the shared schemas (`sharedSchemas()`, read when the first route schema is compiled, after app.ts registered
 * every component), so route schemas refer to components with `Type.Ref` and are validated against the very schema
 * the OpenAPI document names.
 */
function validatorCompiler(sharedSchemas: () => Record<string, unknown>) {
  const base = { allErrors: true, strict: false, removeAdditional: false as const, useDefaults: true };
  let validators: { body: Ajv; text: Ajv } | undefined;
  const build = () => {
    // `discriminator`: a oneOf body told apart by one property is checked against that branch only (clear errors).
    const body = addFormats.default(new Ajv({ ...base, coerceTypes: false, discriminator: true }));
    const text = addFormats.default(new Ajv({ ...base, coerceTypes: 'array' }));
    for (const schema of Object.values(sharedSchemas())) {
      body.addSchema(schema as object);
      text.addSchema(schema as object);
    }
    return { body, text };
  };
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) => {
    validators ??= build();
    return (httpPart === 'body' ? validators.body : validators.text).compile(schema);
  };
}

export interface BuildOptions {
  /** Where log lines go (default stdout); tests capture them to prove no secret is logged. */
  logStream?: { write(line: string): void };
  /**
   * Run the background workers (email outbox, automation runs); default true. Tools that only read the routes, such as
   * the OpenAPI generator, turn them off so that `ready()` never touches the database.
   */
  backgroundWorkers?: boolean;
}

function loggerOptions(config: Config, stream: BuildOptions['logStream']): FastifyServerOptions['logger'] {
  return {
    level: config.logLevel,
    ...(stream ? { stream } : {}),
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', '*.password', '*.token', '*.refresh', '*.access'],
      censor: '[REDACTED]',
    },
    serializers: {
      req: (req: { method: string; url: string; ip?: string; id?: string }) => ({
        method: req.method,
        url: redactUrl(req.url),
        remoteAddress: req.ip,
      }),
    },
  };
}

export async function buildApp(config: Config, options: BuildOptions = {}): Promise<App> {
  const app = Fastify({
    logger: loggerOptions(config, options.logStream),
    bodyLimit: 1024 * 1024,
    // A hop count is valid at run time although Fastify's types omit it.
    trustProxy: config.trustProxy as boolean | string,
    genReqId: () => randomUUID(),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // A request that reaches a closing process is served, not refused with 503: it came on a kept-alive connection
    // at the instant the listener closed (a CI run of the process-replacement test lost one request so). The pools
    // close only after the last connection has ended, and its answer carries `Connection: close` (server.ts).
    return503OnClosing: false,
    frameworkErrors: renderError,
    clientErrorHandler: renderClientError,
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Every route with the options it ended up with (its context marks them): what the route-walk test walks.
  const routes: RouteOptions[] = [];
  app.addHook('onRoute', (route) => void routes.push(route));
  app.decorate('routeCatalog', routes);

  // Only JSON bodies are accepted (415 otherwise).
  app.removeContentTypeParser(['text/plain']);
  app.setValidatorCompiler(validatorCompiler(() => app.getSchemas()));
  app.decorate('config', config);
  // Set by server.ts on SIGTERM, before the server closes: readiness fails and connections are not kept alive.
  app.decorate('lifecycle', { draining: false });
  app.addHook('onSend', async (_request, reply, payload) => {
    if (app.lifecycle.draining) reply.header('connection', 'close');
    return payload;
  });
  configurePasswordHashing(config.passwordHashing);
  for (const warning of config.warnings) app.log.warn(warning);

  await app.register(errorsPlugin);
  await app.register(storableTextPlugin);
  await app.register(securityHeadersPlugin);
  await app.register(corsPlugin);
  // Before any route, and before Swagger UI's static files (@fastify/compress must come first for them).
  await app.register(compressionPlugin);
  await app.register(dbPlugin);
  await app.register(readReplicaPlugin);
  await app.register(metricsPlugin);
  await app.register(idempotencyPlugin);
  await app.register(authPlugin);
  await app.register(rateLimitPlugin);
  await app.register(openapiPlugin, { webhooks: webhooksDocument() });
  await app.register(tenancyPlugin);
  if (options.backgroundWorkers !== false) startJobWorkers(app);

  app.decorate(
    'services',
    composeServices({ db: app.db, pool: app.pg, serving: app.serving.pool, jwt: app.jwtCodec, config, log: app.log }),
  );
  // Open change streams would hold the close forever: they end first, and their clients resume on another instance.
  app.addHook('preClose', async () => app.services.events.close());
  // Every named component, once: routes refer to them by $id and the OpenAPI document lists them under their names.
  for (const schema of COMPONENT_SCHEMAS) app.addSchema(schema);

  // Who may call a route is decided by the context it is registered in, never by the route itself.
  await app.register(publicContext([health.publicRoutes]));
  await app.register(
    async (api) => {
      // Every API answer (tokens, accounts, workspace data, errors) is for one caller only: no browser or proxy keeps
      // a copy (OWASP ASVS 8.2.1). ETags stay, for clients that keep their own cache. /openapi.json and /docs,
      // outside this prefix, stay cacheable.
      api.addHook('onSend', async (_request, reply, payload) => {
        reply.header('cache-control', 'no-store');
        reply.header('pragma', 'no-cache');
        return payload;
      });
      await api.register(
        publicContext([
          auth.publicRoutes,
          account.publicRoutes,
          setup.publicRoutes,
          invitations.publicRoutes,
          installationAdmins.publicRoutes,
          twoFactor.publicRoutes,
        ]),
      );
      await api.register(
        userContext([
          auth.userRoutes,
          account.userRoutes,
          organizations.userRoutes,
          installationAdmins.userRoutes,
          sessions.userRoutes,
          twoFactor.userRoutes,
        ]),
      );
      await api.register(installationContext([installation.installationRoutes]));
      await api.register(
        tenantContext([
          organizations.tenantRoutes,
          invitations.tenantRoutes,
          members.tenantRoutes,
          emailAccounts.tenantRoutes,
          companies.tenantRoutes,
          contacts.tenantRoutes,
          deals.tenantRoutes,
          tasks.tenantRoutes,
          notes.tenantRoutes,
          views.tenantRoutes,
          customFields.tenantRoutes,
          automations.tenantRoutes,
          imports.tenantRoutes,
          deletions.tenantRoutes,
          events.tenantRoutes,
          apiKeys.tenantRoutes,
        ]),
        { prefix: TENANT_PREFIX },
      );
    },
    { prefix: '/api/v1' },
  );
  // The operators' console: its own encapsulated cookie session, form bodies, error pages and headers.
  await app.register(consolePlugin, { prefix: '/admin' });
  return app;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every registered route's final options, in registration order. */
    routeCatalog: readonly RouteOptions[];
    /** `draining`: this process is about to stop (SIGTERM received, SHUTDOWN_DELAY_MS running). */
    lifecycle: { draining: boolean };
  }
}
