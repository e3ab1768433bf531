// Routes of the workspaces themselves: create, read, delete, provisioning handoffs and personal workspaces.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireTenant, requireUser, userAudit } from '../../http/request.js';
import { NoContent, OrganizationParamsSchema, responses } from '../../lib/http-schemas.js';
import { defaultEmptyBody } from '../../http/optional-body.js';
import { PageQuerySchema, pageOf, pageResponse } from '../../lib/pagination.js';
import { sendPage } from '../../http/pagination.js';
import { OrganizationSchema } from './organization-dto.js';
import {
  OrganizationCreateSchema,
  OrganizationCreatedSchema,
  OrganizationUpdateSchema,
  PersonalOrganizationCreateSchema,
  ProvisioningItemSchema,
  ProvisioningResendSchema,
} from './schemas.js';

const tags = ['organizations'];

/** Creating workspaces and the provisioning handoffs: any signed-in user (the services check who may do what). */
export const userRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const organizations = app.services.organizations;

  app.post(
    '/organizations/',
    {
      schema: {
        tags,
        operationId: 'createOrganization',
        summary: 'Create a shared workspace (installation administrators only).',
        description:
          'With your own address as `owner_email` you become the owner at once. With another address the workspace stays ' +
          'hidden in a pending handoff: an Owner invitation is emailed (400 `email_not_configured` when no SMTP account can ' +
          'send it; nothing is created then) and you hold a temporary `admin` membership that disappears when the Owner ' +
          'accepts. A signed-in user who is not an installation administrator gets 403. A taken `slug` is a 409; an ' +
          'omitted one is generated from the name and made unique with a numeric suffix. Rate-limited per user.',
        body: OrganizationCreateSchema,
        response: responses({ 201: OrganizationCreatedSchema }, 401, 403, 409, 429),
      },
      config: { idempotent: true },
      preHandler: app.rateLimitPreset('provisioning'),
    },
    async (request, reply) => {
      reply.code(201);
      return organizations.create(requireUser(request), request.body, userAudit(request));
    },
  );

  app.post(
    '/organizations/personal/',
    {
      schema: {
        tags,
        operationId: 'createPersonalOrganization',
        summary: 'Create your one private personal workspace.',
        description:
          'The body may be omitted; without `name` the workspace is called "Personal workspace". Its slug is generated ' +
          '(`personal-<username>`, made unique). Available once the installation is set up (409 ' +
          '`installation_not_initialized` before). ' +
          'A second personal workspace is a 409 `personal_workspace_exists`. A personal workspace cannot invite, receive ' +
          'members or be deleted.',
        body: PersonalOrganizationCreateSchema,
        response: responses({ 201: Type.Ref(OrganizationSchema) }, 401, 409),
      },
      preValidation: defaultEmptyBody,
      config: { idempotent: true },
    },
    async (request, reply) => {
      reply.code(201);
      return organizations.createPersonal(requireUser(request), request.body, userAudit(request));
    },
  );

  app.get(
    '/organizations/provisioning/',
    {
      schema: {
        tags,
        operationId: 'listProvisioning',
        summary: 'Workspaces awaiting their Owner: your own, or all of them for an installation administrator.',
        querystring: PageQuerySchema,
        response: responses({ 200: pageResponse(ProvisioningItemSchema, 'Pending handoffs, newest first.') }, 401),
      },
    },
    async (request, reply) => {
      const page = pageOf(request.query);
      return sendPage(request, reply, await organizations.listProvisioning(requireUser(request), page), page.limit);
    },
  );

  app.post(
    '/organizations/provisioning/:organization_id/',
    {
      schema: {
        tags,
        operationId: 'resendOwnerInvitation',
        summary: 'Send the Owner invitation of a pending workspace again.',
        description:
          "For the workspace's creator or an installation administrator (404 for anyone else, and for a workspace that is " +
          'not pending). Earlier Owner links stop working; a fresh seven-day link is emailed (400 `email_not_configured`, ' +
          'nothing changed, when no SMTP account can send it). No body, or `{}`. Rate-limited ' +
          'together with workspace creation.',
        params: OrganizationParamsSchema,
        body: ProvisioningResendSchema,
        response: responses({ 200: ProvisioningItemSchema }, 401, 404, 429),
      },
      preValidation: defaultEmptyBody,
      preHandler: app.rateLimitPreset('provisioning'),
    },
    async (request) => organizations.resendOwnerInvitation(requireUser(request), request.params.organization_id, userAudit(request)),
  );

  app.delete(
    '/organizations/provisioning/:organization_id/',
    {
      schema: {
        tags,
        operationId: 'cancelProvisioning',
        summary: 'Cancel a pending workspace.',
        description:
          "For the workspace's creator or an installation administrator (404 otherwise). The workspace is cancelled for " +
          'good: its Owner link stops working and the temporary membership is removed.',
        params: OrganizationParamsSchema,
        response: responses({ 204: NoContent }, 401, 404),
      },
    },
    async (request, reply) => {
      await organizations.cancelProvisioning(requireUser(request), request.params.organization_id, userAudit(request));
      return reply.code(204).send(null);
    },
  );
};

/** The workspace itself, under `/organizations/:organization_id`. */
export const tenantRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const organizations = app.services.organizations;

  app.get(
    '/',
    {
      schema: {
        tags,
        operationId: 'getOrganization',
        summary: 'One workspace you are a member of.',
        description: 'Workspaces you are not a member of, and pending or cancelled ones, answer 404.',
        params: OrganizationParamsSchema,
        response: responses({ 200: Type.Ref(OrganizationSchema) }, 401, 403, 404),
      },
      config: { access: 'VIEW_CRM', apiKeys: true },
      // The workspace's own URL keeps the API's trailing slash (the prefix alone would be registered without it).
      prefixTrailingSlash: 'slash',
    },
    async (request) => organizations.get(requireTenant(request)),
  );

  app.patch(
    '/',
    {
      schema: {
        tags,
        operationId: 'updateOrganization',
        summary: 'Rename a workspace, or require two-factor sign-in of its members.',
        description:
          '`name`: owners and admins (MANAGE_SETTINGS). `require_two_factor`: the owner only (403 `owner_required`), and ' +
          'turning it on only once the owner has two-factor sign-in on (403 `two_factor_required`). The slug never changes.',
        params: OrganizationParamsSchema,
        body: OrganizationUpdateSchema,
        response: responses({ 200: Type.Ref(OrganizationSchema) }, 401, 403, 404),
      },
      config: { access: 'MANAGE_SETTINGS' },
      prefixTrailingSlash: 'slash',
    },
    async (request) => organizations.update(requireTenant(request), request.body, userAudit(request)),
  );

  app.delete(
    '/',
    {
      schema: {
        tags,
        operationId: 'deleteOrganization',
        summary: 'Delete a workspace and everything in it (owner only).',
        description: 'A personal workspace cannot be deleted (403 `personal_workspace`).',
        params: OrganizationParamsSchema,
        response: responses({ 204: NoContent }, 401, 403, 404),
      },
      config: { access: 'DELETE_ORGANIZATION' },
      prefixTrailingSlash: 'slash',
    },
    async (request, reply) => {
      await organizations.delete(requireTenant(request), userAudit(request));
      return reply.code(204).send(null);
    },
  );
};
