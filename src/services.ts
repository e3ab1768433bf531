// The composition root of the domain: every service built once from narrowed dependencies, for routes and console alike.
import type pg from 'pg';
import type { Config } from './config.js';
import type { Db } from './db/client.js';
import type { JwtCodec } from './lib/jwt-codec.js';
import { createTokenService } from './modules/auth/token-service.js';
import { createAuthService } from './modules/auth/service.js';
import { createAccountService } from './modules/account/service.js';
import { createSetupService } from './modules/setup/service.js';
import { createOrganizationService } from './modules/organizations/service.js';
import { createInstallationAdminService } from './modules/installation-admins/service.js';
import { createInvitationLinkService, createInvitationService } from './modules/invitations/service.js';
import { createMemberService } from './modules/members/service.js';
import { createApiKeyService } from './modules/api-keys/service.js';
import { createEmailAccountService } from './modules/email-accounts/service.js';
import { companyService } from './modules/companies/service.js';
import { contactService } from './modules/contacts/service.js';
import { dealService } from './modules/deals/service.js';
import { taskService } from './modules/tasks/service.js';
import { noteService } from './modules/notes/service.js';
import { customFieldService } from './modules/custom-fields/service.js';
import { createImportService } from './modules/imports/service.js';
import { createDeletionService } from './modules/deletions/service.js';
import { createAutomationService } from './modules/automations/service.js';
import { createUserAdminService } from './users/user-admin-service.js';
import { createSessionService } from './modules/sessions/service.js';
import { createTwoFactorService } from './modules/two-factor/service.js';
import { createInstallationService } from './modules/installation/service.js';
import { createConsoleService } from './console/service.js';
import { createEventService } from './modules/events/service.js';
import { createEventHub } from './modules/events/hub.js';
import { sessionDatabaseUrl } from './config.js';
import { createHealthService } from './modules/health/service.js';

export interface ServiceInfrastructure {
  /** The unscoped client: handed only to installation-wide services; tenant services get a `Tenant` per call. */
  db: Db;
  pool: pg.Pool;
  /** The serving role's pool (on the primary): the change feed's reads and stream slots, bound to a workspace per call. */
  serving: pg.Pool;
  jwt: JwtCodec;
  config: Config;
  /** Where the change feed's listener and streams report trouble. */
  log: { warn(object: object, message: string): void };
}

export function composeServices({ db, pool, serving, jwt, config, log }: ServiceInfrastructure) {
  const tokens = createTokenService({ db, pool, jwt, accessTtl: config.accessTokenTtl, refreshTtl: config.refreshTokenTtl });
  const { appUrl, emailEncryptionKey: encryptionKey } = config;
  const twoFactor = createTwoFactorService({ db, encryptionKey, tokens });
  const automations = createAutomationService({
    encryptionKey,
    allowPrivateTargets: config.webhookAllowPrivate,
    automationEmailsPerHour: config.automationEmailsPerHour,
    smtpAllowPrivate: config.smtpAllowPrivate,
  });
  const apiKeys = createApiKeyService();
  const invitations = createInvitationService({ appUrl });
  return {
    health: createHealthService({ pool }),
    // Installation-wide: users, their accounts and tokens, setup, workspaces being created or handed over.
    auth: createAuthService({ pool, tokens, challenge: twoFactor.challenge }),
    sessions: createSessionService({ db, pool }),
    twoFactor,
    account: createAccountService({ db, pool, tokens, appUrl, privacyPolicyVersion: config.privacyPolicyVersion }),
    setup: createSetupService({ db, setupToken: config.setupToken, emailEncryptionKey: encryptionKey }),
    organizations: createOrganizationService({ db, appUrl }),
    installationAdmins: createInstallationAdminService({ db, appUrl, tokens, privacyPolicyVersion: config.privacyPolicyVersion }),
    users: createUserAdminService({ db }),
    invitationLinks: createInvitationLinkService({ db, appUrl, tokens, privacyPolicyVersion: config.privacyPolicyVersion }),
    // Tenant services: each method takes the request's `Tenant` (scoped client, raw reader and writer).
    invitations,
    members: createMemberService(),
    apiKeys,
    emailAccounts: createEmailAccountService({ encryptionKey, allowPrivateHosts: config.smtpAllowPrivate }),
    companies: companyService,
    contacts: contactService,
    deals: dealService,
    tasks: taskService,
    notes: noteService,
    customFields: customFieldService,
    automations,
    // The change feed: one listener per instance wakes its open streams.
    events: createEventService({
      pool: serving,
      hub: createEventHub({ connectionString: sessionDatabaseUrl(config), log }),
      streamsPerWorkspace: config.eventStreamsPerWorkspace,
      log,
    }),
    imports: createImportService(),
    deletions: createDeletionService(),
    // The installation administrators' API; its data export reads CRM records through the tenant services above.
    installation: createInstallationService({
      db,
      pool,
      serving,
      config,
      crm: { companies: companyService, contacts: contactService, automations, deals: dealService, tasks: taskService, notes: noteService },
    }),
    // The operators' console: its reads and sign-in, beside the API services above that its actions reuse.
    console: createConsoleService({ db, pool, session: config.adminSession, apiKeys, invitations, automations }),
  };
}

export type Services = ReturnType<typeof composeServices>;

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
  }
}
