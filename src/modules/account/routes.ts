// Routes of the signed-in user's account (me, profile, settings, export, deletion, password) and of password reset.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DetailSchema, NoContent, Ref, responses } from '../../lib/http-schemas.js';
import { requireUser, userAudit } from '../../http/request.js';
import {
  AccountExportSchema,
  DeleteAccountSchema,
  EmailChangeParamsSchema,
  MeSchema,
  PasswordChangeSchema,
  PasswordResetConfirmSchema,
  PasswordResetParamsSchema,
  PasswordResetRequestSchema,
  PrivacyPolicyParamsSchema,
  ProfilePatchSchema,
  ProfileSchema,
  SettingsPatchSchema,
  SettingsSchema,
} from './schemas.js';

const Detail = Ref(DetailSchema);
const PASSWORD_CHECK_LIMIT =
  'Password checks (this endpoint, account deletion and email changes) are limited per user (429 with `Retry-After`); ' +
  '503 `server_busy` (with `Retry-After`) when too many password checks are queued on the server.';

/** The password reset and email change links: the link's token is the credential. */
export const publicRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const account = app.services.account;
  app.post(
    '/auth/password-reset/',
    {
      schema: {
        tags: ['account'],
        operationId: 'requestPasswordReset',
        summary: 'Email a password reset link.',
        description:
          'Answers the same 200 whether or not the address has an account, after the same work (the request is queued; ' +
          'the lookup and the email happen in the background). When it has, a link ' +
          '`<SERVICE_APP_URL>/reset-password/<uidb64>/<token>` valid for one hour and usable once is emailed. ' +
          'Limited per client IP (429 with `Retry-After`).',
        body: Ref(PasswordResetRequestSchema),
        response: responses({ 200: Detail }, 429),
      },
      preHandler: app.rateLimitPreset('passwordReset'),
    },
    async (request) => {
      await account.requestPasswordReset(request.body.email);
      return { detail: 'If an account uses this email address, a link to reset its password has been sent to it.' };
    },
  );

  app.post(
    '/auth/password-reset/:uidb64/:token/',
    {
      schema: {
        tags: ['account'],
        operationId: 'confirmPasswordReset',
        summary: 'Set a new password through an emailed reset link.',
        description:
          'Ends every session of the account and every other reset link. A link that is unknown, expired, already used, ' +
          'or older than the last password change answers 404.',
        params: PasswordResetParamsSchema,
        body: Ref(PasswordResetConfirmSchema),
        response: responses({ 200: Detail }, 404, 503),
      },
    },
    async (request) => {
      await account.confirmPasswordReset(request.params, request.body.new_password, { ip: request.ip });
      return { detail: 'Your password has been set. Sign in with the new password.' };
    },
  );

  app.post(
    '/auth/email-change/:token/',
    {
      schema: {
        tags: ['account'],
        operationId: 'confirmEmailChange',
        summary: 'Confirm a new email address through the emailed link.',
        description:
          "Makes the pending address the account's email and ends the password reset links sent to the old one. A link " +
          'that is unknown, expired, replaced by a newer change or already used answers 404 (`email_change_invalid`); an ' +
          'address another account took meanwhile answers 409 (`email_taken`).',
        params: EmailChangeParamsSchema,
        response: responses({ 200: Detail }, 404, 409),
      },
    },
    async (request) => {
      await account.confirmEmailChange(request.params.token, { ip: request.ip });
      return { detail: 'Your email address has been changed.' };
    },
  );
};

/** The signed-in user's own account. */
export const userRoutes: FastifyPluginAsyncTypebox = async (scope) => {
  const account = scope.services.account;
  const passwordChecks = scope.rateLimitPreset('passwordChecks');

  scope.get(
    '/auth/me/',
    {
      schema: {
        tags: ['account'],
        operationId: 'getMe',
        summary: 'The signed-in user and the workspaces they can see, each with their role in it.',
        response: responses({ 200: Ref(MeSchema) }, 401),
      },
    },
    async (request) => account.me(requireUser(request)),
  );

  scope.post(
    '/auth/me/privacy-policy/:version',
    {
      schema: {
        tags: ['account'],
        operationId: 'acceptPrivacyPolicy',
        summary: 'Accept the current privacy policy.',
        description:
          'Records that the caller accepted privacy policy `version` (and when): 400 unless it is the current version ' +
          '(PRIVACY_POLICY_VERSION). Answers `me`, whose `privacy_policy_acceptance_required` is then false.',
        params: PrivacyPolicyParamsSchema,
        response: responses({ 200: Ref(MeSchema) }, 400, 401),
      },
    },
    async (request) => account.acceptPrivacyPolicy(requireUser(request), request.params.version),
  );

  scope.get(
    '/auth/me/profile/',
    {
      schema: {
        tags: ['account'],
        operationId: 'getProfile',
        summary: "The signed-in user's profile.",
        response: responses({ 200: Ref(ProfileSchema) }, 401),
      },
    },
    async (request) => account.profile(requireUser(request).id),
  );

  scope.patch(
    '/auth/me/profile/',
    {
      schema: {
        tags: ['account'],
        operationId: 'updateProfile',
        summary: 'Complete or update the profile.',
        description:
          'Any subset of the editable fields; null clears one. Setting a display name the first time sets `onboarding_completed_at`.',
        body: Ref(ProfilePatchSchema),
        response: responses({ 200: Ref(ProfileSchema) }, 401),
      },
    },
    async (request) => account.updateProfile(requireUser(request).id, request.body),
  );

  scope.get(
    '/auth/me/settings/',
    {
      schema: {
        tags: ['account'],
        operationId: 'getSettings',
        summary: "The signed-in user's settings: the profile plus email preferences.",
        response: responses({ 200: Ref(SettingsSchema) }, 401),
      },
    },
    async (request) => account.settings(requireUser(request).id),
  );

  scope.patch(
    '/auth/me/settings/',
    {
      schema: {
        tags: ['account'],
        operationId: 'updateSettings',
        summary: 'Update the email address, the profile fields and the marketing consent.',
        description:
          'A new `email` needs `current_password` (400 `validation_failed` without it, 400 `wrong_password` when wrong) ' +
          'and does not change the address yet: a link `<SERVICE_APP_URL>/confirm-email/<token>`, valid seven days and ' +
          'usable once, is emailed to the new address (see `confirmEmailChange`), a notice goes to the current address, ' +
          'and outstanding password reset links and earlier pending changes die. The answer is the same whether or not ' +
          'another account uses the new address (then no link is sent). The response shows the current address. ' +
          PASSWORD_CHECK_LIMIT,
        body: Ref(SettingsPatchSchema),
        response: responses({ 200: Ref(SettingsSchema) }, 401, 429, 503),
      },
      // Only an email change checks the password; other settings changes do not count against that limit.
      preHandler: async (request, reply) => {
        if (request.body.current_password !== undefined) await passwordChecks.call(scope, request, reply);
      },
    },
    async (request) => account.updateSettings(requireUser(request).id, request.body),
  );

  scope.get(
    '/auth/me/export/',
    {
      schema: {
        tags: ['account'],
        operationId: 'exportAccount',
        summary: 'Download the personal data of the account.',
        description:
          'Account, profile and membership metadata as a JSON attachment; never tokens, password hashes, SMTP data or CRM records.',
        response: responses(
          {
            200: {
              ...Ref(AccountExportSchema),
              headers: { 'content-disposition': Type.String({ description: '`attachment; filename="account-export.json"`' }) },
            },
          },
          401,
        ),
      },
    },
    async (request, reply) => {
      const data = await account.export(requireUser(request).id);
      reply.header('content-disposition', 'attachment; filename="account-export.json"');
      return data;
    },
  );

  scope.post(
    '/auth/me/delete/',
    {
      schema: {
        tags: ['account'],
        operationId: 'deleteAccount',
        summary: 'Delete the account.',
        description:
          'Needs the current password and `confirmation: "DELETE"`. Refused with 409 while the user owns a shared ' +
          'workspace (`owner_of_workspace`: transfer the ownership first) or is the only installation administrator ' +
          '(`last_installation_admin`). Deletes the personal workspace and memberships; every token stops working. ' +
          PASSWORD_CHECK_LIMIT,
        body: Ref(DeleteAccountSchema),
        response: responses({ 204: NoContent }, 401, 409, 429, 503),
      },
      preHandler: passwordChecks,
    },
    async (request, reply) => {
      await account.delete(requireUser(request).id, request.body, userAudit(request));
      return reply.code(204).send(null);
    },
  );

  scope.post(
    '/auth/me/password/',
    {
      schema: {
        tags: ['account'],
        operationId: 'changePassword',
        summary: 'Change the password.',
        description:
          'A wrong current password answers 400 (`wrong_password`, `errors.current_password`). On success every session ' +
          'of the account ends, this one included: no new tokens are returned, sign in again with the new password. ' +
          PASSWORD_CHECK_LIMIT,
        body: Ref(PasswordChangeSchema),
        response: responses({ 200: Detail }, 401, 429, 503),
      },
      preHandler: passwordChecks,
    },
    async (request) => {
      await account.changePassword(requireUser(request).id, request.body, userAudit(request));
      return { detail: 'Your password has been changed. Sign in again with the new password.' };
    },
  );
};
