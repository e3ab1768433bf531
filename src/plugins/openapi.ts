// Generates the OpenAPI 3.1 document from the route schemas; serves it at /openapi.json and Swagger UI at /docs.
import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { DetailSchema, ProblemSchema } from '../lib/http-schemas.js';
import { defaultEmptyBody } from '../lib/optional-body.js';
import { OrganizationSchema, RoleSchema } from '../modules/organizations/organization-dto.js';

export const API_DESCRIPTION = `Multi-tenant CRM backend. Tenants are workspaces (organizations), reached only through a membership.

Conventions:
- Authenticate with \`POST /api/v1/auth/token/\` and send \`Authorization: Bearer <access>\`. Refresh tokens rotate: always store the new one.
- Errors are RFC 9457 \`application/problem+json\` bodies with a stable \`code\`, a \`detail\`, and \`errors\` per field for validation failures.
- Unknown properties in a request body are rejected with 400 (CRM create bodies ignore \`organization\`/\`organization_id\`: the tenant comes from the path).
- Organizations the caller cannot access answer 404, never 403, so their existence is not revealed.
- Lists return a JSON array, newest first; pass \`limit\` (1-200, default 50) and follow the \`Link: <...>; rel="next"\` header.
- Bodies over 1 MiB answer 413; bodies that are not JSON answer 415; rate limits answer 429 with \`Retry-After\`.

A separate administrative console for operators (staff users) is served at \`/admin/\`: server-rendered HTML pages with their own cookie sessions, outside this API and not described in this document; API Bearer tokens do not open it and its cookie does not authorize API requests.`;

export default fp(
  async (app) => {
    app.addSchema(ProblemSchema);
    app.addSchema(DetailSchema);
    app.addSchema(RoleSchema);
    app.addSchema(OrganizationSchema);
    // @fastify/swagger marks every request body required; routes running defaultEmptyBody accept none at all.
    const optionalBodies = new Set<string>();
    app.addHook('onRoute', (route) => {
      if (![route.preValidation].flat().includes(defaultEmptyBody)) return;
      for (const method of [route.method].flat()) optionalBodies.add(`${method.toLowerCase()} ${route.url.replace(/:(\w+)/g, '{$1}')}`);
    });
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: { title: 'Workspace CRM API', version: '1.0.0', description: API_DESCRIPTION },
        servers: [{ url: '/' }],
        components: {
          securitySchemes: {
            bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Access token from POST /api/v1/auth/token/.' },
          },
        },
        tags: [
          { name: 'auth', description: 'Tokens: sign in, refresh, sign out.' },
          { name: 'account', description: 'The signed-in user: profile, settings, export, password, deletion.' },
          { name: 'setup', description: 'One-time, token-protected first-run setup.' },
          { name: 'organizations', description: 'Workspaces, provisioning handoffs and personal workspaces.' },
          { name: 'invitations', description: 'Workspace invitations and their links.' },
          { name: 'installation-admins', description: 'Installation administrators and their invitations.' },
          { name: 'members', description: 'Workspace memberships.' },
          { name: 'email-accounts', description: 'A workspace\'s own SMTP accounts.' },
          { name: 'companies', description: 'CRM companies.' },
          { name: 'contacts', description: 'CRM contacts.' },
          { name: 'automations', description: 'Automation rules and their runs.' },
          { name: 'health', description: 'Liveness and readiness.' },
        ],
      },
      transformObject: (documentObject) => {
        const document = (documentObject as { openapiObject: { paths?: Record<string, Record<string, { requestBody?: { required?: boolean } }>> } }).openapiObject;
        for (const [url, item] of Object.entries(document.paths ?? {})) {
          for (const [method, operation] of Object.entries(item)) {
            if (operation.requestBody && optionalBodies.has(`${method} ${url}`)) operation.requestBody.required = false;
          }
        }
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
