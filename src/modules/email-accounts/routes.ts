import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireTenant } from '../../http/request.js';
import { sendPage } from '../../http/pagination.js';
import { DetailSchema, NoContent, OrganizationParamsSchema, Ref, responses } from '../../lib/http-schemas.js';
import { PageQuerySchema, pageOf, pageResponse } from '../../lib/pagination.js';
import {
  EmailAccountCreateSchema,
  EmailAccountParamsSchema,
  EmailAccountSchema,
  EmailAccountTestSchema,
  EmailAccountUpdateSchema,
} from './schemas.js';

const tags = ['email-accounts'];
const collection = '/email-accounts/';
const item = '/email-accounts/:account_id/';
const HOST_POLICY =
  'A `host` that is a loopback, private, link-local or otherwise non-public IP address, or `localhost`, is a 400 ' +
  '(`errors.host`) unless the server sets EMAIL_SMTP_ALLOW_PRIVATE; host names are checked again after DNS on every ' +
  'send (a name resolving to such an address fails the send).';

/** The SMTP accounts of the workspace in the path (MANAGE_SETTINGS). */
export const tenantRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const accounts = app.services.emailAccounts;

  app.get(
    collection,
    {
      schema: {
        tags,
        operationId: 'listEmailAccounts',
        summary: "The workspace's SMTP accounts (owner or admin).",
        params: OrganizationParamsSchema,
        querystring: PageQuerySchema,
        response: responses(
          { 200: pageResponse(Ref(EmailAccountSchema), 'Accounts, newest first; passwords are never returned.') },
          401,
          403,
          404,
        ),
      },
      config: { access: 'MANAGE_SETTINGS' },
    },
    async (request, reply) => {
      const page = pageOf(request.query);
      return sendPage(request, reply, await accounts.list(requireTenant(request), page), page.limit);
    },
  );

  app.post(
    collection,
    {
      schema: {
        tags,
        operationId: 'createEmailAccount',
        summary: 'Add an SMTP account (owner or admin).',
        description:
          'Accounts are stored only when the server has an EMAIL_ENCRYPTION_KEY (400 `encryption_key_missing` otherwise): the ' +
          'password is encrypted and never returned; responses carry `has_password`. The first account, or one created with ' +
          '`is_default: true`, becomes the default and the previous default is unset. ' +
          HOST_POLICY,
        params: OrganizationParamsSchema,
        body: Ref(EmailAccountCreateSchema),
        response: responses({ 201: Ref(EmailAccountSchema) }, 401, 403, 404),
      },
      config: { access: 'MANAGE_SETTINGS' },
    },
    async (request, reply) => {
      reply.code(201);
      return accounts.create(requireTenant(request), request.body);
    },
  );

  app.get(
    item,
    {
      schema: {
        tags,
        operationId: 'getEmailAccount',
        summary: 'One SMTP account (owner or admin).',
        params: EmailAccountParamsSchema,
        response: responses({ 200: Ref(EmailAccountSchema) }, 401, 403, 404),
      },
      config: { access: 'MANAGE_SETTINGS' },
    },
    async (request) => accounts.get(requireTenant(request), request.params.account_id),
  );

  app.patch(
    item,
    {
      schema: {
        tags,
        operationId: 'updateEmailAccount',
        summary: 'Change an SMTP account (owner or admin).',
        description:
          'Send only the fields to change. A new `password` replaces the stored one (400 `encryption_key_missing` without ' +
          'the server key); an empty one removes it. `is_default: true` makes this the default and unsets the previous one; ' +
          '`is_default: false` on the default is a 400 (make another account the default instead). Changing `host`, `port`, ' +
          '`username`, `use_tls` or `use_ssl` of an account with a stored password requires `password` again (400 ' +
          '`password_required`, `errors.password`), so the stored password can never be sent to a server it was not ' +
          'entered for. ' +
          HOST_POLICY,
        params: EmailAccountParamsSchema,
        body: Ref(EmailAccountUpdateSchema),
        response: responses({ 200: Ref(EmailAccountSchema) }, 401, 403, 404),
      },
      config: { access: 'MANAGE_SETTINGS' },
    },
    async (request) => accounts.update(requireTenant(request), request.params.account_id, request.body),
  );

  app.delete(
    item,
    {
      schema: {
        tags,
        operationId: 'deleteEmailAccount',
        summary: 'Delete an SMTP account (owner or admin).',
        description: 'When it was the default, the oldest remaining account becomes the default.',
        params: EmailAccountParamsSchema,
        response: responses({ 204: NoContent }, 401, 403, 404),
      },
      config: { access: 'MANAGE_SETTINGS' },
    },
    async (request, reply) => {
      await accounts.delete(requireTenant(request), request.params.account_id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/email-accounts/:account_id/test/',
    {
      schema: {
        tags,
        operationId: 'testEmailAccount',
        summary: 'Send one test message through an SMTP account now (owner or admin).',
        description:
          '200 when the SMTP server accepted the message (not a delivery guarantee); 502 `smtp_failed` with a generic body ' +
          'on a network, TLS, authentication or rejection failure. Works for inactive accounts too. Test sends (this and ' +
          'automation test runs) are limited per user (`RATE_LIMIT_TEST_SENDS_PER_HOUR`, 429 with `Retry-After`).',
        params: EmailAccountParamsSchema,
        body: Ref(EmailAccountTestSchema),
        response: responses({ 200: Ref(DetailSchema) }, 401, 403, 404, 429, 502),
      },
      config: { access: 'MANAGE_SETTINGS' },
      preHandler: app.rateLimitPreset('testSends'),
    },
    async (request) => accounts.test(requireTenant(request), request.params.account_id, request.body.recipient, request.log),
  );
};
