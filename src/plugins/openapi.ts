// Generates the OpenAPI 3.1 document from the route schemas; serves it at /openapi.json and Swagger UI at /docs.
import { ERROR_CODES } from '../lib/error-codes.js';
import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { defaultEmptyBody } from '../http/optional-body.js';
import { DOCUMENTED_AS } from '../lib/http-schemas.js';

/** The `code` catalogue as a Markdown table for `info.description`. */
const errorCatalogue = () =>
  [
    '| code | meaning |',
    '|---|---|',
    ...Object.entries(ERROR_CODES).map(([code, meaning]) => `| \`${code}\` | ${meaning.replaceAll('|', '\\|')} |`),
  ].join('\n');

export const API_DESCRIPTION = `Multi-tenant CRM backend. Tenants are workspaces (organizations), reached only through a membership.

Conventions:
- Authenticate with \`POST /api/v1/auth/token/\` and send \`Authorization: Bearer <access>\`. Refresh tokens rotate: always store
  the new one.
- Errors are RFC 9457 \`application/problem+json\` bodies with a stable \`code\` (catalogue below), the request id as
  \`instance\`, a \`detail\`, and \`errors\` per field for validation failures.
- Unknown properties in a request body are rejected with 400 (CRM create bodies ignore \`organization\`/\`organization_id\`: the
  tenant comes from the path).
- Organizations the caller cannot access answer 404, never 403, so their existence is not revealed.
- Lists return a JSON array, newest first; pass \`limit\` (1-200, default 50) and follow the \`Link: <...>; rel="next"\` header.
- Bodies over 1 MiB answer 413; bodies that are not JSON answer 415; rate limits answer 429 with \`Retry-After\`.
- Request budgets: each workspace's routes (\`/api/v1/organizations/{organization_id}/...\`) share a budget per minute,
  people and API keys together (the installation's \`RATE_LIMIT_WORKSPACE_PER_MINUTE\`, default 12,000), and each workspace
  API key has its own on top (\`RATE_LIMIT_API_KEY_PER_MINUTE\`, default 600), counted after authentication and shared by
  all of the installation's processes when it runs with Redis. Over budget: 429 \`request_budget_exceeded\` with
  \`Retry-After\`; every answer of those routes carries \`RateLimit-Policy\` and \`RateLimit\` (IETF draft), exposed to
  browsers through CORS.
- Bodies (and query strings) nested more than 32 levels deep answer 400 \`validation_failed\`, however they are shaped.
- Every answer under \`/api/v1/\` carries \`Cache-Control: no-store\` (and \`Pragma: no-cache\`): browsers and proxies keep
  no copy of a user's data or tokens. This document and Swagger UI stay cacheable.
- Public operations say \`security: []\`; the others need the bearer token (\`bearerAuth\`); the workspace's CRM
  operations also take a workspace API key (\`apiKeyAuth\`), every other operation answers it 403 \`api_key_not_allowed\`.
- Path ids are UUIDs: \`/api/v1/organizations/provisioning/{organization_id}/\` and
  \`/api/v1/organizations/{organization_id}/...\` never match the same URL, since \`provisioning\` is not a UUID.

A separate administrative console for operators (staff users) is served at \`/admin/\`: server-rendered HTML pages with their
own cookie sessions, outside this API and not described in this document; API Bearer tokens do not open it and its cookie does
not authorize API requests.`;

interface OpenApiResponse {
  headers?: Record<string, { required?: boolean; schema?: unknown; description?: string }>;
}
interface OpenApiOperation {
  requestBody?: { required?: boolean };
  security?: Array<Record<string, string[]>>;
  responses?: Record<string, OpenApiResponse>;
}
interface OpenApiDocument {
  paths?: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, unknown> };
  webhooks?: Record<string, unknown>;
}

export interface OpenApiOptions {
  /** The OpenAPI 3.1 `webhooks` section: the requests the service sends (built by the feature that sends them). */
  webhooks?: Record<string, unknown>;
}
type JsonSchema = { [key: string]: unknown };

/** The X-RateLimit-* headers of a 429 response (as declared by `responses()`), to declare on its success responses. */
const rateLimitHeaders = (limited: OpenApiResponse) =>
  Object.fromEntries(Object.entries(limited.headers ?? {}).filter(([name]) => name.startsWith('X-RateLimit-')));

/**
 * A `oneOf` with a `discriminator` (see automations' `discriminatedUnion`) selects among named branches: the
 * discriminator maps each tag value to its branch, the value read from the branch's tag property (a TypeBox literal).
 */
function mapDiscriminators(node: unknown, components: Record<string, unknown>): void {
  if (Array.isArray(node)) {
    for (const child of node) mapDiscriminators(child, components);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const schema = node as JsonSchema;
  for (const child of Object.values(schema)) mapDiscriminators(child, components);
  const discriminator = schema.discriminator as { propertyName: string; mapping?: Record<string, string> } | undefined;
  if (!discriminator || !Array.isArray(schema.oneOf)) return;
  const mapping: Record<string, string> = {};
  for (const { $ref } of schema.oneOf as Array<{ $ref?: string }>) {
    const branch = components[String($ref).replace('#/components/schemas/', '')] as JsonSchema | undefined;
    // A TypeBox literal reaches the document as `enum: [value]`.
    const property = (branch?.properties as Record<string, { const?: unknown; enum?: unknown[] }> | undefined)?.[
      discriminator.propertyName
    ];
    const tag = property?.const ?? (property?.enum?.length === 1 ? property.enum[0] : undefined);
    if (typeof $ref !== 'string' || typeof tag !== 'string')
      throw new Error(`discriminated branch without a named schema or a tag: ${JSON.stringify($ref)}`);
    mapping[tag] = $ref;
  }
  discriminator.mapping = mapping;
}

/** Replaces each `DocumentedAs` schema by the schema it documents (with its description). */
function documentPassedThrough(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(documentPassedThrough);
  if (node === null || typeof node !== 'object') return node;
  const schema = node as JsonSchema;
  const documented = schema[DOCUMENTED_AS] as JsonSchema | undefined;
  if (documented) return { ...documented, ...(schema.description ? { description: schema.description } : {}) };
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, documentPassedThrough(value)]));
}

export default fp<OpenApiOptions>(
  async (app, options) => {
    // @fastify/swagger marks every request body required; routes running defaultEmptyBody accept none at all.
    const optionalBodies = new Set<string>();
    app.addHook('onRoute', (route) => {
      if (![route.preValidation].flat().includes(defaultEmptyBody)) return;
      for (const method of [route.method].flat()) optionalBodies.add(`${method.toLowerCase()} ${route.url.replace(/:(\w+)/g, '{$1}')}`);
    });
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Workspace CRM API',
          // The contract's version (openapi/CHANGELOG.md): a breaking change for clients is a new major version.
          version: '2.0.0',
          description: `${API_DESCRIPTION}\n\n## Error codes\n\n${errorCatalogue()}`,
          license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
        },
        servers: [{ url: '/' }],
        components: {
          securitySchemes: {
            bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Access token from POST /api/v1/auth/token/.' },
            apiKeyAuth: {
              type: 'http',
              scheme: 'bearer',
              bearerFormat: 'crm_live_…',
              description:
                "A workspace API key (POST /api/v1/organizations/{organization_id}/api-keys/), sent as `Authorization: Bearer crm_live_…`; accepted only on the operations that list this scheme (the workspace's CRM endpoints).",
            },
            streamTicket: {
              type: 'apiKey',
              in: 'query',
              name: 'ticket',
              description:
                'A single-use change-stream ticket (POST /api/v1/organizations/{organization_id}/events/tickets/, 60 seconds), for clients that cannot send an Authorization header (EventSource); accepted only on the operations that list this scheme.',
            },
          },
        },
        tags: [
          {
            name: 'auth',
            description: 'Tokens: sign in (with a second factor when on), refresh, sign out; sessions; two-factor enrolment.',
          },
          { name: 'account', description: 'The signed-in user: profile, settings, export, password, deletion.' },
          { name: 'setup', description: 'One-time, token-protected first-run setup.' },
          { name: 'organizations', description: 'Workspaces, provisioning handoffs and personal workspaces.' },
          { name: 'invitations', description: 'Workspace invitations and their links.' },
          { name: 'installation-admins', description: 'Installation administrators and their invitations.' },
          {
            name: 'installation',
            description:
              "The installation administrators' API: production readiness, system information, audit log, backup status, data export.",
          },
          { name: 'members', description: 'Workspace memberships.' },
          { name: 'api-keys', description: 'Workspace API keys for server-to-server integrations.' },
          { name: 'email-accounts', description: "A workspace's own SMTP accounts." },
          { name: 'companies', description: 'CRM companies.' },
          { name: 'contacts', description: 'CRM contacts.' },
          { name: 'deals', description: 'CRM deals: the pipeline board, kanban moves and the summary per stage.' },
          { name: 'tasks', description: 'CRM tasks: calls, emails, meetings and to-dos about a company.' },
          {
            name: 'custom-fields',
            description:
              "A workspace's own fields on companies, contacts, deals and tasks, and the workspace's OpenAPI document that names them.",
          },
          { name: 'notes', description: 'Notes on companies, contacts, deals and tasks: Markdown text on one or more records.' },
          {
            name: 'views',
            description: 'Saved views: a named query (filter, search, sort) and columns of one record type, personal or for the workspace.',
          },
          { name: 'sync', description: "Keeping a copy in step: the lists' `updated_since` and the deletions feed." },
          { name: 'automations', description: 'Automation rules and their runs.' },
          { name: 'imports', description: 'CSV imports of companies and contacts: progress, failed rows, cancel.' },
          {
            name: 'webhooks',
            description: 'What a webhook rule sends (the `webhooks` section): one delivery per event, signed per Standard Webhooks.',
          },
          { name: 'health', description: 'Liveness and readiness.' },
        ],
      },
      transformObject: (documentObject) => {
        const document = (documentObject as { openapiObject: OpenApiDocument }).openapiObject;
        // A copy: the edits below must not reach the schemas the routes validate and serialize with.
        document.paths = structuredClone(document.paths);
        for (const [url, item] of Object.entries(document.paths ?? {})) {
          for (const [method, operation] of Object.entries(item)) {
            if (operation.requestBody && optionalBodies.has(`${method} ${url}`)) operation.requestBody.required = false;
            // Protected routes name the bearer scheme; one that names none is public and says so (linters and
            // generated clients otherwise cannot tell "public" from "undocumented").
            operation.security ??= [];
            // The router refuses a path parameter over 200 characters before any route runs.
            const badRequest = operation.responses?.['400'] as (OpenApiResponse & { description?: string }) | undefined;
            if (url.includes('{') && badRequest && operation.responses) {
              operation.responses['414'] ??= {
                ...structuredClone(badRequest),
                description: 'A path parameter is longer than 200 characters.',
              } as OpenApiResponse;
            }
            const limited = operation.responses?.['429'];
            if (limited?.headers?.['Retry-After']) {
              limited.headers['Retry-After'].required = true;
              // The rate limiter reports the window on every answer of a limited route, not only on the 429.
              for (const [status, response] of Object.entries(operation.responses ?? {})) {
                if (/^2\d\d$/.test(status)) response.headers = { ...response.headers, ...rateLimitHeaders(limited) };
              }
            }
          }
        }
        document.components = { ...document.components, schemas: structuredClone(document.components?.schemas ?? {}) };
        document.components.schemas = documentPassedThrough(document.components.schemas) as typeof document.components.schemas;
        document.paths = documentPassedThrough(document.paths) as typeof document.paths;
        mapDiscriminators(document.components.schemas, document.components.schemas as Record<string, unknown>);
        if (options.webhooks) document.webhooks = structuredClone(options.webhooks);
        return document;
      },
      refResolver: {
        // Shared schemas keep their $id as their component name (Problem, Detail, ...).
        buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
      },
    });
    await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true, persistAuthorization: true } });
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  },
  { name: 'openapi' },
);
