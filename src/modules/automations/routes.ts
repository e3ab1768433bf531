// Routes of the automations area: rules, the synchronous test run, and run history of an organization.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { NoContent, OrganizationParamsSchema, Ref, responses } from '../../lib/http-schemas.js';
import { defaultEmptyBody } from '../../http/optional-body.js';
import { PageQuerySchema, pageOf, pageResponse } from '../../lib/pagination.js';
import { sendPage } from '../../http/pagination.js';
import { requestAudit, requireTenant } from '../../http/request.js';
import { CONDITIONAL_GET_NOTE, conditionalRead, conditionalWrite, ifMatch, sendRecord, tagged, withEtag } from '../../http/etag.js';
import {
  AutomationCreateSchema,
  AutomationParamsSchema,
  AutomationRunSchema,
  AutomationSchema,
  AutomationTestResultSchema,
  AutomationTestSchema,
  AutomationUpdateSchema,
  WebhookSecretRotationSchema,
} from './schemas.js';

/** Parts every route's schema shares; lists add the page query. */
const documented = { tags: ['automations'] };
const listed = { ...documented, querystring: PageQuerySchema };
const base = '/automations';

const READ_NOTE = 'Needs VIEW_CRM (every role). ';
const WEBHOOK_URL_NOTE =
  'Callers without MANAGE_AUTOMATIONS see only the origin of a webhook `url` (`https://hooks.example.com`): webhook ' +
  'paths often carry credentials. ';
const SECRET_NOTE = 'Webhook secrets are never returned (`action_config.has_secret` tells whether one is set).';
const MANAGE_NOTE = 'Needs MANAGE_AUTOMATIONS (owner, admin): 403 otherwise. ';

/** The automation rules and runs of the workspace in the path. */
export const tenantRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const automations = app.services.automations;

  app.get(
    `${base}/`,
    {
      schema: {
        ...listed,
        operationId: 'listAutomations',
        summary: 'Automation rules of the organization.',
        description: `${READ_NOTE + WEBHOOK_URL_NOTE}${SECRET_NOTE}`,
        params: OrganizationParamsSchema,
        response: responses({ 200: pageResponse(Ref(AutomationSchema), 'Rules, newest first.') }, 401, 403, 404),
      },
      config: { access: 'VIEW_CRM', apiKeys: true },
    },
    async (request, reply) => {
      const page = pageOf(request.query);
      return sendPage(request, reply, await automations.list(requireTenant(request), page), page.limit);
    },
  );

  app.post(
    `${base}/`,
    {
      schema: {
        ...documented,
        operationId: 'createAutomation',
        summary: 'Save a rule; nothing runs now.',
        description:
          MANAGE_NOTE +
          'From then on every matching CRM event of the organization queues a run while the rule is active (`is_active`, ' +
          'default true; PATCH changes it and the other fields, DELETE removes the rule). `action_config` depends on ' +
          "`action_type`: `send_email` `{to, subject, body}`, sent through the workspace's default email account or the " +
          'installation fallback (see `SendEmailConfig` for the sending policy); `webhook` `{url, secret?, generate_secret?}` ' +
          '(`generate_secret: true`: the server generates a `whsec_` secret, returned once in `action_config.secret`). A webhook ' +
          'URL with a loopback, private, link-local or ' +
          'other non-public literal address, or a `localhost` name, is refused (400 `errors["action_config.url"]`) unless ' +
          'the server sets AUTOMATION_WEBHOOK_ALLOW_PRIVATE=true; host names are checked again after DNS on every delivery. ' +
          'The `secret` is stored encrypted and never returned; without a server EMAIL_ENCRYPTION_KEY it cannot be stored ' +
          '(400 `encryption_key_missing`).',
        params: OrganizationParamsSchema,
        body: Ref(AutomationCreateSchema),
        response: responses({ 201: Ref(AutomationSchema) }, 401, 403, 404, 413, 415),
      },
      config: { access: 'MANAGE_AUTOMATIONS', apiKeys: true, idempotent: true },
    },
    async (request, reply) => {
      reply.code(201);
      return automations.create(requireTenant(request), request.body, requestAudit(request));
    },
  );

  app.get(
    `${base}/runs/`,
    {
      schema: {
        ...listed,
        operationId: 'listAutomationRuns',
        summary: 'Runs of every rule of the organization.',
        description: READ_NOTE,
        params: OrganizationParamsSchema,
        response: responses({ 200: pageResponse(Ref(AutomationRunSchema), 'Runs, newest first.') }, 401, 403, 404),
      },
      config: { access: 'VIEW_CRM', apiKeys: true },
    },
    async (request, reply) => {
      const page = pageOf(request.query);
      return sendPage(request, reply, await automations.listRuns(requireTenant(request), page), page.limit);
    },
  );

  app.post(
    `${base}/:automation_id/rotate-secret/`,
    {
      schema: {
        ...documented,
        operationId: 'rotateAutomationSecret',
        summary: "Replace a webhook rule's signing secret; the old one signs beside it for 24 hours.",
        description:
          MANAGE_NOTE +
          'The server generates a new `whsec_` secret and returns it this once. For 24 hours (until ' +
          '`previous_secret_expires_at`) every delivery carries two signatures in `webhook-signature`, by the new and by ' +
          'the replaced secret, so a receiver can switch secrets without losing deliveries; then only the new one signs. ' +
          'A rule without a secret gets one (its deliveries are signed from now on). 400 `automation_not_webhook` for a ' +
          "`send_email` rule. The answer carries the rule's new `ETag`. With `If-Match` (the `ETag` of `GET`), only a rule " +
          'still at that version is rotated: 412 `precondition_failed` otherwise (also when another rotation won the ' +
          'race), so two people rotating from the same reading rotate once. Without it, 409 `automation_changed` when ' +
          'another rotation won the race.',
        params: AutomationParamsSchema,
        ...conditionalWrite({ 200: tagged(Ref(WebhookSecretRotationSchema)) }, 409),
      },
      config: { access: 'MANAGE_AUTOMATIONS', apiKeys: true },
    },
    async (request, reply) => {
      const tenant = requireTenant(request);
      const rotated = await automations.rotateSecret(tenant, request.params.automation_id, requestAudit(request), ifMatch(request));
      withEtag(reply, { updated_at: rotated.updatedAt.toISOString() });
      return rotated.rotation;
    },
  );

  app.get(
    `${base}/:automation_id/`,
    {
      schema: {
        ...documented,
        operationId: 'getAutomation',
        summary: 'One automation rule.',
        description:
          `${READ_NOTE + WEBHOOK_URL_NOTE}404 for a rule of another organization. ${CONDITIONAL_GET_NOTE} Rules are not ` +
          "changed (PATCH), rotated and deleted with `If-Match` naming this tag. The tag is the rule's " +
          'version whoever reads it: a caller whose role changes should read the rule again without `If-None-Match`, ' +
          'as the webhook `url` it is shown depends on the role.',
        params: AutomationParamsSchema,
        ...conditionalRead(Ref(AutomationSchema)),
      },
      config: { access: 'VIEW_CRM', apiKeys: true },
    },
    async (request, reply) => sendRecord(request, reply, await automations.get(requireTenant(request), request.params.automation_id)),
  );

  app.patch(
    `${base}/:automation_id/`,
    {
      schema: {
        ...documented,
        operationId: 'updateAutomation',
        summary: 'Change a rule (name, trigger, action settings, active or paused).',
        description:
          MANAGE_NOTE +
          'Send only the fields to change. `action_type` cannot change (delete the rule and create another); ' +
          "`action_config` replaces the rule's settings whole and must be of its action type (400 otherwise), checked as " +
          "on create. A webhook rule keeps its signing secret (and a rotation's overlap) unless `secret` or " +
          '`generate_secret: true` is given; a generated secret is returned this once in `action_config.secret`. ' +
          '`is_active: false` pauses the rule: events meanwhile queue no runs for it; runs already queued still run. ' +
          "The answer carries the rule's new `ETag`. With `If-Match`, only a rule still at that version: 412 " +
          '`precondition_failed` otherwise; without it, 409 `automation_changed` when another change won the race.',
        params: AutomationParamsSchema,
        body: Ref(AutomationUpdateSchema),
        ...conditionalWrite({ 200: tagged(Ref(AutomationSchema)) }, 409, 413, 415),
      },
      config: { access: 'MANAGE_AUTOMATIONS', apiKeys: true },
    },
    async (request, reply) => {
      const tenant = requireTenant(request);
      const updated = await automations.update(tenant, request.params.automation_id, request.body, requestAudit(request), ifMatch(request));
      return withEtag(reply, updated);
    },
  );

  app.delete(
    `${base}/:automation_id/`,
    {
      schema: {
        ...documented,
        operationId: 'deleteAutomation',
        summary: 'Delete a rule; its runs stay listed.',
        description:
          MANAGE_NOTE +
          'The rule stops at once: no new runs are queued for it. Its runs stay listed under `automations/runs/` with ' +
          "the deleted rule's `automation_id` (the rule itself then answers 404); a run still queued finishes as " +
          '`skipped`. With `If-Match`, only a rule still at that version (412 `precondition_failed` otherwise).',
        params: AutomationParamsSchema,
        ...conditionalWrite({ 204: NoContent }),
      },
      config: { access: 'MANAGE_AUTOMATIONS', apiKeys: true },
    },
    async (request, reply) => {
      await automations.delete(requireTenant(request), request.params.automation_id, requestAudit(request), ifMatch(request));
      return reply.code(204).send(null);
    },
  );

  app.get(
    `${base}/:automation_id/runs/`,
    {
      schema: {
        ...listed,
        operationId: 'listAutomationRunsOfRule',
        summary: 'Runs of one rule.',
        description: `${READ_NOTE}404 for a rule of another organization.`,
        params: AutomationParamsSchema,
        response: responses({ 200: pageResponse(Ref(AutomationRunSchema), 'Runs of the rule, newest first.') }, 401, 403, 404),
      },
      config: { access: 'VIEW_CRM', apiKeys: true },
    },
    async (request, reply) => {
      const page = pageOf(request.query);
      return sendPage(request, reply, await automations.listRuns(requireTenant(request), page, request.params.automation_id), page.limit);
    },
  );

  app.post(
    `${base}/:automation_id/test/`,
    {
      schema: {
        ...documented,
        operationId: 'testAutomation',
        summary: "Execute the rule's action now and record the run.",
        description:
          MANAGE_NOTE +
          'Not a dry run: the email is sent, the webhook called, synchronously, also for an inactive rule. The event ' +
          'carries `test: true` and `data` from the body (default `{}`); the body may be omitted. Answers 201 with the ' +
          'run whether it succeeded, failed or was skipped by the sending policy: inspect `status` and ' +
          '`run.error_message`. One attempt, no retries; a ' +
          'webhook gets 5 seconds and redirects are not followed (a 3xx is a failure). Test runs (and email-account test ' +
          'sends) are limited per user (`RATE_LIMIT_TEST_SENDS_PER_HOUR`, 429 with `Retry-After`).',
        params: AutomationParamsSchema,
        body: Ref(AutomationTestSchema),
        response: responses({ 201: Ref(AutomationTestResultSchema) }, 401, 403, 404, 413, 415, 429),
      },
      preValidation: defaultEmptyBody,
      config: { access: 'MANAGE_AUTOMATIONS', apiKeys: true },
      preHandler: app.rateLimitPreset('testSends'),
    },
    async (request, reply) => {
      reply.code(201);
      return automations.test(requireTenant(request), request.params.automation_id, request.body, request.log);
    },
  );
};
