// Client code written with the named types a generator makes of openapi/openapi.json: it compiles under --strict only
// while the document names each resource, body and enum once. Not compiled with the project: the generator tests copy it
// beside a generator's output, with a ./types.ts that re-exports that generator's types.
import type {
  AdminInvitation,
  Automation,
  AutomationCreate,
  AutomationRun,
  AutomationRunStatus,
  AutomationTrigger,
  Company,
  CompanyCreate,
  CompanyQueryPage,
  CompanyUpdate,
  Contact,
  ContactCreate,
  ContactUpdate,
  EmailAccount,
  EmailAccountCreate,
  ErrorCode,
  Filter,
  FilterCondition,
  FilterOperator,
  HealthStatus,
  Invitation,
  InvitationCreate,
  InvitationStatus,
  LifecycleStage,
  Me,
  Member,
  MembershipRole,
  Organization,
  Problem,
  Profile,
  ProfileUpdate,
  RecordQuery,
  SetupAvailability,
  Settings,
  TokenPair,
} from './types.js';

/** `true` exactly when A and B are the same type. */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** Compiles only with `true`: the two types are the same. */
export const sameType = <A, B>(proof: Equals<A, B>): boolean => proof;

// Enums are unions of exactly their values: a value added or removed in the document breaks these lines.
export const STAGE_LABELS: Record<LifecycleStage, string> = {
  lead: 'Lead',
  prospect: 'Prospect',
  customer: 'Customer',
  inactive: 'Inactive',
};
sameType<MembershipRole, 'owner' | 'admin' | 'member' | 'viewer'>(true);
sameType<InvitationStatus, 'pending' | 'accepted' | 'expired' | 'revoked'>(true);
sameType<AutomationRunStatus, 'queued' | 'running' | 'success' | 'failed' | 'skipped'>(true);
sameType<
  AutomationTrigger,
  | 'company.created'
  | 'company.updated'
  | 'company.deleted'
  | 'contact.created'
  | 'contact.updated'
  | 'contact.deleted'
  | 'import.finished'
  | 'deal.stage_changed'
  | 'task.completed'
  | 'note.created'
>(true);
// One type per enum, wherever it is used.
sameType<Company['lifecycle_stage'], LifecycleStage>(true);
sameType<Organization['current_user_role'], MembershipRole>(true);
sameType<Member['role'], MembershipRole>(true);
sameType<Invitation['status'], InvitationStatus>(true);
sameType<AutomationRun['status'], AutomationRunStatus>(true);
sameType<Automation['trigger'], AutomationTrigger>(true);
sameType<Problem['code'], ErrorCode>(true);

// Read and write variants: a form creates through CompanyCreate and edits a Company through CompanyUpdate.
export const draft: CompanyCreate = { name: 'Initech', lifecycle_stage: 'prospect' };
export function changesOf(company: Company, edited: Company): CompanyUpdate {
  return edited.name === company.name ? { lifecycle_stage: edited.lifecycle_stage } : { name: edited.name };
}
export const isCustomer = (company: Company): boolean => company.lifecycle_stage === 'customer';

export const newContact = (company: Company): ContactCreate => ({ company_id: company.id, first_name: 'Ada', last_name: 'Lovelace' });
export const moveContact = (to: Company): ContactUpdate => ({ company_id: to.id });
export const fullName = (contact: Contact): string => `${contact.first_name} ${contact.last_name}`;

/** What a client shows for an error answer: the typed problem with its per-field messages. */
export function describe(problem: Problem): string {
  const code: ErrorCode = problem.code;
  const fields = Object.entries(problem.errors ?? {}).map(([field, messages]) => `${field}: ${messages.join(' ')}`);
  return [`${problem.status} ${code}: ${problem.detail}`, ...fields].join('\n');
}

export const bearer = (tokens: TokenPair): string => `Bearer ${tokens.access}`;
export const workspaces = (me: Me): Organization[] =>
  me.organizations.filter((organization) => organization.current_user_role !== 'viewer');
export const greeting = (profile: Profile, settings: Settings): string =>
  `${profile.display_name ?? profile.username}${settings.marketing_consent ? '' : ' (no newsletter)'}`;
export const rename: ProfileUpdate = { display_name: 'Ada' };

export const invite: InvitationCreate = { email: 'new@example.test', role: 'member' };
export const pending = (invitations: Invitation[]): Invitation[] => invitations.filter((invitation) => invitation.status === 'pending');
export const adminInvited = (invitation: AdminInvitation): string => `${invitation.email} until ${invitation.expires_at}`;

export const webhook: AutomationCreate = {
  name: 'Tell the CRM bridge',
  trigger: 'company.created',
  action_type: 'webhook',
  action_config: { url: 'https://hooks.example.test/crm' },
  // Written out: openapi-typescript types a property with a default as present.
  is_active: true,
};
export const lastStatus = (runs: AutomationRun[]): AutomationRunStatus | undefined => runs[0]?.status;

export const smtp: EmailAccountCreate = {
  name: 'Sales',
  host: 'smtp.example.test',
  port: 587,
  username: 'sales',
  password: 'secret',
  from_email: 'sales@example.test',
  use_tls: true,
  use_ssl: false,
};
export const sender = (account: EmailAccount): string => account.from_name ?? account.from_email;
export const healthy = (status: HealthStatus, setup: SetupAvailability): boolean => status.status === 'ok' && !setup.available;

// A query's filter tree is typed node by node: a client builds "customers in Germany or France, without an industry,
// not named Acme", sorted by name, and reads the page's next cursor.
const country = (code: string): FilterCondition => ({ field: 'country', op: 'eq', value: code });
export const customersAbroad: Filter = {
  and: [
    { field: 'lifecycle_stage', op: 'eq', value: 'customer' },
    { or: [country('DE'), country('FR')] },
    { field: 'industry', op: 'is_empty' },
    { not: { field: 'name', op: 'in', value: ['Acme', 'Initech'] } },
  ],
};
export const customersQuery: RecordQuery = { filter: customersAbroad, sort: [{ field: 'name', direction: 'asc' }], limit: 50 };
export const nextQuery = (query: RecordQuery, page: CompanyQueryPage): RecordQuery | undefined =>
  page.next_cursor === null ? undefined : { ...query, cursor: page.next_cursor };
export const ORDERED_OPS: FilterOperator[] = ['lt', 'lte', 'gt', 'gte'];
