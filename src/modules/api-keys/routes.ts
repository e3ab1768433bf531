// Routes of workspace API keys: create (the key shown once), list and revoke; owners and admins (MANAGE_SETTINGS).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { requireTenant, userAudit } from '../../http/request.js';
import { NoContent, OrganizationParamsSchema, responses } from '../../lib/http-schemas.js';
import { ApiKeyCreateSchema, ApiKeyCreatedSchema, ApiKeyParamsSchema, ApiKeySchema } from './schemas.js';

const tags = ['api-keys'];
const ACCESS_NOTE = 'Needs MANAGE_SETTINGS (owner, admin); API keys themselves cannot manage keys. ';

/** The API keys of the workspace in the path. */
export const tenantRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const apiKeys = app.services.apiKeys;
  app.post(
    '/api-keys/',
    {
      schema: {
        tags,
        operationId: 'createApiKey',
        summary: 'Create a workspace API key; the key is in this answer only.',
        description: `${ACCESS_NOTE}The key starts with \`crm_live_\` (for secret scanners) and authenticates with \`Authorization: Bearer <key>\` on the workspace's CRM endpoints only. Only its SHA-256 is stored.`,
        params: OrganizationParamsSchema,
        body: ApiKeyCreateSchema,
        response: responses({ 201: Type.Ref(ApiKeyCreatedSchema) }, 400, 401, 403, 404),
      },
      config: { access: 'MANAGE_SETTINGS' },
    },
    async (request, reply) => {
      reply.code(201);
      return apiKeys.create(requireTenant(request), request.body, userAudit(request));
    },
  );

  app.get(
    '/api-keys/',
    {
      schema: {
        tags,
        operationId: 'listApiKeys',
        summary: 'Live (unrevoked) API keys of the workspace, newest first; never their secrets.',
        description: ACCESS_NOTE,
        params: OrganizationParamsSchema,
        response: responses({ 200: Type.Array(Type.Ref(ApiKeySchema)) }, 401, 403, 404),
      },
      config: { access: 'MANAGE_SETTINGS' },
    },
    async (request) => apiKeys.list(requireTenant(request)),
  );

  app.delete(
    '/api-keys/:key_id/',
    {
      schema: {
        tags,
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key: its next request is refused.',
        description: ACCESS_NOTE,
        params: ApiKeyParamsSchema,
        response: responses({ 204: NoContent }, 401, 403, 404),
      },
      config: { access: 'MANAGE_SETTINGS' },
    },
    async (request, reply) => {
      await apiKeys.revoke(requireTenant(request), request.params.key_id, userAudit(request));
      reply.code(204);
    },
  );
};
