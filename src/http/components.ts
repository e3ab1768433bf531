// Every named schema of the API, registered once with app.addSchema: routes refer to them with `Ref` and
// @fastify/swagger lists them under `components/schemas` by their `$id`. A new named schema joins its module's list.
import type { TSchema } from '@sinclair/typebox';
import { DetailSchema, ErrorCodeSchema, ProblemSchema } from '../lib/http-schemas.js';
import { ACCOUNT_SCHEMAS } from '../modules/account/schemas.js';
import { API_KEY_SCHEMAS } from '../modules/api-keys/schemas.js';
import { AUTH_SCHEMAS } from '../modules/auth/schemas.js';
import { AUTOMATION_SCHEMAS } from '../modules/automations/schemas.js';
import { WEBHOOK_SCHEMAS } from '../modules/automations/webhook-events.js';
import { COMPANY_SCHEMAS } from '../modules/companies/schemas.js';
import { CONTACT_SCHEMAS } from '../modules/contacts/schemas.js';
import { CRM_ACTIVITY_SCHEMAS } from '../records/activity-schemas.js';
import { DEAL_SCHEMAS } from '../modules/deals/schemas.js';
import { TASK_SCHEMAS } from '../modules/tasks/schemas.js';
import { NOTE_SCHEMAS } from '../modules/notes/schemas.js';
import { VIEW_SCHEMAS } from '../modules/views/schemas.js';
import { CUSTOM_FIELD_SCHEMAS } from '../modules/custom-fields/schemas.js';
import { CUSTOM_FIELD_VALUE_SCHEMAS } from '../records/custom-fields/schemas.js';
import { ListSortSchema } from '../records/record-schemas.js';
import { FILTER_SCHEMAS } from '../records/filter/schema.js';
import { DELETION_SCHEMAS } from '../modules/deletions/schemas.js';
import { EVENT_SCHEMAS } from '../modules/events/schemas.js';
import { SmtpAccountInputSchema } from '../email/smtp-account-input.js';
import { EMAIL_ACCOUNT_SCHEMAS } from '../modules/email-accounts/schemas.js';
import { HealthStatusSchema } from '../modules/health/schemas.js';
import { IMPORT_SCHEMAS } from '../modules/imports/schemas.js';
import { INSTALLATION_SCHEMAS } from '../modules/installation/schemas.js';
import { INSTALLATION_ADMIN_SCHEMAS } from '../modules/installation-admins/schemas.js';
import { INVITATION_SCHEMAS } from '../modules/invitations/schemas.js';
import { MEMBER_SCHEMAS } from '../modules/members/schemas.js';
import { OrganizationSchema, RoleSchema } from '../modules/organizations/organization-dto.js';
import { ORGANIZATION_SCHEMAS } from '../modules/organizations/schemas.js';
import { SESSION_SCHEMAS } from '../modules/sessions/schemas.js';
import { SETUP_SCHEMAS } from '../modules/setup/schemas.js';
import { TWO_FACTOR_SCHEMAS } from '../modules/two-factor/schemas.js';

export const COMPONENT_SCHEMAS: readonly TSchema[] = [
  ErrorCodeSchema,
  ProblemSchema,
  DetailSchema,
  HealthStatusSchema,
  ...AUTH_SCHEMAS,
  ...SESSION_SCHEMAS,
  ...TWO_FACTOR_SCHEMAS,
  ...ACCOUNT_SCHEMAS,
  ...SETUP_SCHEMAS,
  SmtpAccountInputSchema,
  RoleSchema,
  OrganizationSchema,
  ...ORGANIZATION_SCHEMAS,
  ...MEMBER_SCHEMAS,
  ...INVITATION_SCHEMAS,
  ...INSTALLATION_ADMIN_SCHEMAS,
  ...INSTALLATION_SCHEMAS,
  ...EMAIL_ACCOUNT_SCHEMAS,
  ...CRM_ACTIVITY_SCHEMAS,
  ListSortSchema,
  ...FILTER_SCHEMAS,
  ...CUSTOM_FIELD_VALUE_SCHEMAS,
  ...CUSTOM_FIELD_SCHEMAS,
  ...COMPANY_SCHEMAS,
  ...CONTACT_SCHEMAS,
  ...DEAL_SCHEMAS,
  ...TASK_SCHEMAS,
  ...NOTE_SCHEMAS,
  ...VIEW_SCHEMAS,
  ...DELETION_SCHEMAS,
  ...AUTOMATION_SCHEMAS,
  ...EVENT_SCHEMAS,
  ...IMPORT_SCHEMAS,
  ...API_KEY_SCHEMAS,
  ...WEBHOOK_SCHEMAS,
];
