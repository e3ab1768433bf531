// Routes of a workspace's custom field definitions (reads VIEW_CRM, changes MANAGE_SETTINGS) and of its own OpenAPI
// document, whose records name those fields.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { requireTenant } from '../../http/request.js';
import { NoContent, OrganizationParamsSchema, Ref, responses } from '../../lib/http-schemas.js';
import { workspaceDocumentText } from './openapi.js';
import {
  CustomFieldCreateSchema,
  CustomFieldListQuerySchema,
  CustomFieldParamsSchema,
  CustomFieldSchema,
  CustomFieldUpdateSchema,
  OpenApiDocumentSchema,
} from './schemas.js';

const tags = ['custom-fields'];
const collection = '/custom-fields/';
const item = '/custom-fields/:field_id/';
const read = { access: 'VIEW_CRM', apiKeys: true } as const;
const change = { access: 'MANAGE_SETTINGS' } as const;

export const tenantRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const fields = app.services.customFields;

  app.get(
    collection,
    {
      schema: {
        tags,
        operationId: 'listCustomFields',
        summary: "The workspace's custom fields (VIEW_CRM).",
        description:
          'By record type (`object`), then `position`; one list, not paged (at most 100 active fields per record type). ' +
          '`archived`: `active` (default), `archived` or `all`.',
        params: OrganizationParamsSchema,
        querystring: CustomFieldListQuerySchema,
        response: responses({ 200: Type.Array(Ref(CustomFieldSchema), { description: 'The fields.' }) }, 401, 403, 404),
      },
      config: read,
    },
    async (request) => fields.list(requireTenant(request).db, request.query),
  );

  app.post(
    collection,
    {
      schema: {
        tags,
        operationId: 'createCustomField',
        summary: 'Add a custom field to a record type (MANAGE_SETTINGS).',
        description:
          'Records get the field at once, null until written (no record is rewritten). A key taken by another field of ' +
          'the record type, archived ones included, or a 101st active field answers 400.',
        params: OrganizationParamsSchema,
        body: Ref(CustomFieldCreateSchema),
        response: responses({ 201: Ref(CustomFieldSchema) }, 401, 403, 404),
      },
      config: change,
    },
    async (request, reply) => {
      const tenant = requireTenant(request);
      reply.code(201);
      return fields.create(tenant.db, tenant.organization.id, request.body);
    },
  );

  app.get(
    item,
    {
      schema: {
        tags,
        operationId: 'getCustomField',
        summary: 'One custom field, archived or not (VIEW_CRM).',
        params: CustomFieldParamsSchema,
        response: responses({ 200: Ref(CustomFieldSchema) }, 401, 403, 404),
      },
      config: read,
    },
    async (request) => fields.get(requireTenant(request).db, request.params.field_id),
  );

  app.patch(
    item,
    {
      schema: {
        tags,
        operationId: 'updateCustomField',
        summary: 'Change the label, required flag, options, position or description of a custom field (MANAGE_SETTINGS).',
        description:
          '`key`, `type` and `object` never change (400). Making a field required leaves records without a value as ' +
          'they are; their next PATCH may not clear it. Removing an option that records hold (archived records too) ' +
          'answers 409 `option_in_use`, their count in `detail`.',
        params: CustomFieldParamsSchema,
        body: Ref(CustomFieldUpdateSchema),
        response: responses({ 200: Ref(CustomFieldSchema) }, 401, 403, 404, 409),
      },
      config: change,
    },
    async (request) => fields.update(requireTenant(request).db, request.params.field_id, request.body),
  );

  app.delete(
    item,
    {
      schema: {
        tags,
        operationId: 'archiveCustomField',
        summary: 'Archive a custom field (MANAGE_SETTINGS).',
        description:
          'The field leaves every answer (records, queries, exports, the workspace document); records keep their values, ' +
          'which `restore` brings back. Its key stays taken. Archiving an archived field changes nothing.',
        params: CustomFieldParamsSchema,
        response: responses({ 204: NoContent }, 401, 403, 404),
      },
      config: change,
    },
    async (request, reply) => {
      await fields.archive(requireTenant(request).db, request.params.field_id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    `${item}restore/`,
    {
      schema: {
        tags,
        operationId: 'restoreCustomField',
        summary: 'Restore an archived custom field with the values records kept (MANAGE_SETTINGS).',
        description: 'A record type that already has 100 active fields answers 400. Restoring an active field changes nothing.',
        params: CustomFieldParamsSchema,
        response: responses({ 200: Ref(CustomFieldSchema) }, 401, 403, 404),
      },
      config: change,
    },
    async (request) => fields.restore(requireTenant(request).db, request.params.field_id),
  );

  app.get(
    '/openapi.json',
    {
      schema: {
        tags,
        operationId: 'getWorkspaceOpenApiDocument',
        summary: "This workspace's OpenAPI document, naming its custom fields (VIEW_CRM).",
        description:
          "The API's OpenAPI 3.1 document (as `/openapi.json` serves it) where the `custom_fields` of `Company`, `Contact`, " +
          "`Deal` and `Task` and of their create and update bodies list this workspace's active custom fields as typed " +
          "properties: a select's values as an `enum`, a multi_select as an array of that enum, a decimal as a string with " +
          'its pattern, dates and date-times with their formats; each nullable in answers (required ones not in bodies). A ' +
          'client generated from it names the fields. Built again whenever a definition changes.',
        params: OrganizationParamsSchema,
        response: responses({ 200: Ref(OpenApiDocumentSchema) }, 401, 403, 404),
      },
      config: read,
      // About as large as the static document (hundreds of kB): compressed like it when the client asks.
      compress: {},
    },
    async (request, reply) => {
      const tenant = requireTenant(request);
      const text = await workspaceDocumentText(tenant.db, tenant.organization.id, () => app.swagger());
      // Already JSON: sent as it is.
      return reply.type('application/json; charset=utf-8').send(text);
    },
  );
};
