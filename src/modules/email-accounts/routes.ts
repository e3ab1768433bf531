// Routes of a workspace's SMTP accounts (owner or admin): CRUD and a synchronous test send.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { requireTenant } from '../../plugins/tenancy.js';
import { DetailSchema, NoContent, OrganizationParamsSchema, responses } from '../../lib/http-schemas.js';
import { PageQuerySchema, pageOf, pageResponse, paginate } from '../../lib/pagination.js';
import {
  EmailAccountCreateSchema,
  EmailAccountParamsSchema,
  EmailAccountSchema,
  EmailAccountTestSchema,
  EmailAccountUpdateSchema,
} from './schemas.js';
import {
  createEmailAccount,
  deleteEmailAccount,
  getEmailAccount,
  listEmailAccounts,
  testEmailAccount,
  toEmailAccountDto,
  updateEmailAccount,
  type EmailAccountDeps,
} from './service.js';

const security = [{ bearerAuth: [] }];
const tags = ['email-accounts'];
const collection = '/organizations/:organization_id/email-accounts/';
const item = '/organizations/:organization_id/email-accounts/:account_id/';
const HOST_POLICY =
  'A `host` that is a loopback, private, link-local or otherwise non-public IP address, or `localhost`, is a 400 ' +
  '(`errors.host`) unless the server sets EMAIL_SMTP_ALLOW_PRIVATE; host names are checked again after DNS on every ' +
  'send (a name resolving to such an address fails the send).';

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const guard = [app.resolveTenant, app.requireCapability('MANAGE_SETTINGS')];
  const deps = (request: FastifyRequest): EmailAccountDeps => {
    const tenant = requireTenant(request);
    return {
      db: tenant.db,
      organization: tenant.organization,
      encryptionKey: app.config.emailEncryptionKey,
      allowPrivateHosts: app.config.smtpAllowPrivate,
    };
  };

  app.get(
    collection,
    {
      schema: {
        tags,
        security,
        operationId: 'listEmailAccounts',
        summary: "The workspace's SMTP accounts (owner or admin).",
        params: OrganizationParamsSchema,
        querystring: PageQuerySchema,
        response: responses(
          { 200: pageResponse(EmailAccountSchema, 'Accounts, newest first; passwords are never returned.') },
          401,
          403,
          404,
        ),
      },
      preHandler: guard,
    },
    async (request, reply) => {
      const page = pageOf(request.query);
      return paginate(request, reply, await listEmailAccounts(requireTenant(request).db, page), page.limit).map(toEmailAccountDto);
    },
  );

  app.post(
    collection,
    {
      schema: {
        tags,
        security,
        operationId: 'createEmailAccount',
        summary: 'Add an SMTP account (owner or admin).',
        description:
          'Accounts are stored only when the server has an EMAIL_ENCRYPTION_KEY (400 `encryption_key_missing` otherwise): the ' +
          'password is encrypted and never returned; responses carry `has_password`. The first account, or one created with ' +
          '`is_default: true`, becomes the default and the previous default is unset. ' +
          HOST_POLICY,
        params: OrganizationParamsSchema,
        body: EmailAccountCreateSchema,
        response: responses({ 201: EmailAccountSchema }, 401, 403, 404),
      },
      preHandler: guard,
    },
    async (request, reply) => {
      reply.code(201);
      return createEmailAccount(deps(request), request.body);
    },
  );

  app.get(
    item,
    {
      schema: {
        tags,
        security,
        operationId: 'getEmailAccount',
        summary: 'One SMTP account (owner or admin).',
        params: EmailAccountParamsSchema,
        response: responses({ 200: EmailAccountSchema }, 401, 403, 404),
      },
      preHandler: guard,
    },
    async (request) => getEmailAccount(requireTenant(request).db, request.params.account_id),
  );

  app.patch(
    item,
    {
      schema: {
        tags,
        security,
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
        body: EmailAccountUpdateSchema,
        response: responses({ 200: EmailAccountSchema }, 401, 403, 404),
      },
      preHandler: guard,
    },
    async (request) => updateEmailAccount(deps(request), request.params.account_id, request.body),
  );

  app.delete(
    item,
    {
      schema: {
        tags,
        security,
        operationId: 'deleteEmailAccount',
        summary: 'Delete an SMTP account (owner or admin).',
        description: 'When it was the default, the oldest remaining account becomes the default.',
        params: EmailAccountParamsSchema,
        response: responses({ 204: NoContent }, 401, 403, 404),
      },
      preHandler: guard,
    },
    async (request, reply) => {
      await deleteEmailAccount(deps(request), request.params.account_id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/organizations/:organization_id/email-accounts/:account_id/test/',
    {
      schema: {
        tags,
        security,
        operationId: 'testEmailAccount',
        summary: 'Send one test message through an SMTP account now (owner or admin).',
        description:
          '200 when the SMTP server accepted the message (not a delivery guarantee); 502 `smtp_failed` with a generic body ' +
          'on a network, TLS, authentication or rejection failure. Works for inactive accounts too. Test sends (this and ' +
          'automation test runs) are limited per user (`RATE_LIMIT_TEST_SENDS_PER_HOUR`, 429 with `Retry-After`).',
        params: EmailAccountParamsSchema,
        body: EmailAccountTestSchema,
        response: responses({ 200: Type.Ref(DetailSchema) }, 401, 403, 404, 429, 502),
      },
      preHandler: [...guard, app.rateLimitPreset('testSends')],
    },
    async (request) => testEmailAccount({ ...deps(request), log: request.log }, request.params.account_id, request.body.recipient),
  );
};
export default routes;
