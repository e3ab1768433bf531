// A workspace's own SMTP accounts: passwords encrypted at rest and never returned, exactly one default account,
// and a synchronous test send.
import type { EmailAccount, Organization } from '../../generated/prisma/client.js';
import type { TenantDb, TenantTx } from '../../db/tenant-scope.js';
import { lockOrganization } from '../../db/organization-lock.js';
import { encryptSecret } from '../../lib/crypto.js';
import { isUuid } from '../../lib/http-schemas.js';
import { afterPosition, newestFirst, pageOfDtos, type Page, type PageRequest } from '../../lib/pagination.js';
import type { Tenant } from '../../db/tenant.js';
import { badGateway, badRequest, notFound, validationFailed } from '../../lib/problem.js';
import { sendMail, settingsOfAccount, SmtpError } from '../../email/mailer.js';
import { renderEmail } from '../../email/templates.js';
import { emailAccountColumns, smtpInputErrors } from '../../email/smtp-account-input.js';
import { isObviouslyPrivateHost } from '../automations/network-policy.js';
import type { EmailAccountCreate, EmailAccountDto, EmailAccountUpdate } from './schemas.js';

export interface EmailAccountDeps {
  /** The tenant-scoped client of `organization`. */
  db: TenantDb;
  organization: Organization;
  encryptionKey: Buffer | null;
  /** EMAIL_SMTP_ALLOW_PRIVATE: otherwise hosts must not be loopback, private or other non-public addresses. */
  allowPrivateHosts: boolean;
}

export function toEmailAccountDto(account: EmailAccount): EmailAccountDto {
  return {
    id: account.id,
    name: account.name,
    host: account.host,
    port: account.port,
    username: account.username,
    has_password: account.passwordEncrypted !== null,
    from_email: account.fromEmail,
    from_name: account.fromName,
    use_tls: account.useTls,
    use_ssl: account.useSsl,
    is_default: account.isDefault,
    is_active: account.isActive,
    created_at: account.createdAt.toISOString(),
    updated_at: account.updatedAt.toISOString(),
  };
}

const accountNotFound = () => notFound('Email account not found.', 'email_account_not_found');
const encryptionKeyMissing = () =>
  badRequest('encryption_key_missing', 'The server has no EMAIL_ENCRYPTION_KEY configured: SMTP passwords cannot be stored or used.');

function requireKey(key: Buffer | null): Buffer {
  if (!key) throw encryptionKeyMissing();
  return key;
}

function assertOneTlsMode(tls: { use_tls: boolean; use_ssl: boolean }): void {
  const errors = smtpInputErrors(tls);
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
}

/** The webhook network policy for SMTP hosts: any member with MANAGE_SETTINGS could otherwise probe internal hosts. */
function assertHostAllowed(host: string | undefined, allowPrivate: boolean): void {
  if (host === undefined || allowPrivate) return;
  if (
    isObviouslyPrivateHost(
      host
        .replace(/^\[(.*)\]$/, '$1')
        .replace(/\.$/, '')
        .toLowerCase(),
    )
  ) {
    throw validationFailed({ host: ['Private, loopback, link-local and other non-public addresses are not allowed.'] });
  }
}

/** Settings that decide where the stored password is sent: changing any of them needs the password again. */
const CONNECTION_FIELDS = [
  ['host', 'host'],
  ['port', 'port'],
  ['username', 'username'],
  ['use_tls', 'useTls'],
  ['use_ssl', 'useSsl'],
] as const;

/**
 * 400 when a PATCH points an account with a stored password at another server, login or TLS mode without sending
 * the password again: the stored one would otherwise go to a server (possibly in clear) chosen by whoever edits it.
 */
function assertPasswordResent(input: EmailAccountUpdate, current: EmailAccount): void {
  if (current.passwordEncrypted === null || input.password !== undefined) return;
  const changed = CONNECTION_FIELDS.some(([field, column]) => input[field] !== undefined && input[field] !== current[column]);
  if (changed) {
    throw badRequest('password_required', 'Enter the password again to change the host, port, username or TLS settings.', {
      password: ['Required when the host, port, username or TLS settings change.'],
    });
  }
}

/** The columns a PATCH changes; absent fields stay undefined (unchanged), an empty password removes the stored one. */
function changedColumns(input: EmailAccountUpdate, key: Buffer | null) {
  const { password } = input;
  return {
    name: input.name,
    host: input.host,
    port: input.port,
    username: input.username,
    passwordEncrypted: password === undefined ? undefined : password === '' ? null : encryptSecret(password, requireKey(key)),
    fromEmail: input.from_email,
    fromName: input.from_name === undefined ? undefined : input.from_name || null,
    useTls: input.use_tls,
    useSsl: input.use_ssl,
    isActive: input.is_active,
  };
}

async function findAccount(db: TenantDb | TenantTx, accountId: string): Promise<EmailAccount> {
  if (!isUuid(accountId)) throw accountNotFound();
  const account = await db.emailAccount.findUnique({ where: { id: accountId } });
  if (!account) throw accountNotFound();
  return account;
}

/** The organization's accounts, newest first (`limit + 1` rows for the pager). */
export function listEmailAccounts(db: TenantDb, page: PageRequest): Promise<EmailAccount[]> {
  return db.emailAccount.findMany({ where: afterPosition(page.after), orderBy: newestFirst, take: page.limit + 1 });
}

export async function getEmailAccount(db: TenantDb, accountId: string): Promise<EmailAccountDto> {
  return toEmailAccountDto(await findAccount(db, accountId));
}

/** Default changes run with the organization row locked, so two requests cannot leave zero or two defaults. */
function inLockedOrganization<T>(deps: EmailAccountDeps, change: (tx: TenantTx) => Promise<T>): Promise<T> {
  return deps.db.$transaction(async (tx) => {
    await lockOrganization(tx, deps.organization.id);
    return change(tx);
  });
}

const unsetDefault = (tx: TenantTx) => tx.emailAccount.updateMany({ where: { isDefault: true }, data: { isDefault: false } });

/**
 * Stores a new account (the server's encryption key is required, as for setup's `smtp`); it becomes the default when
 * asked to or when it is the organization's first.
 */
export async function createEmailAccount(deps: EmailAccountDeps, input: EmailAccountCreate): Promise<EmailAccountDto> {
  assertOneTlsMode(input);
  assertHostAllowed(input.host, deps.allowPrivateHosts);
  const columns = emailAccountColumns(input, requireKey(deps.encryptionKey));
  return inLockedOrganization(deps, async (tx) => {
    const isDefault = input.is_default === true || (await tx.emailAccount.count()) === 0;
    if (isDefault) await unsetDefault(tx);
    const account = await tx.emailAccount.create({
      data: { ...columns, organizationId: deps.organization.id, isActive: input.is_active ?? true, isDefault },
    });
    return toEmailAccountDto(account);
  });
}

/** Changes an account. `is_default: true` moves the default here; the default itself cannot be unset. */
export async function updateEmailAccount(deps: EmailAccountDeps, accountId: string, input: EmailAccountUpdate): Promise<EmailAccountDto> {
  assertHostAllowed(input.host, deps.allowPrivateHosts);
  const columns = changedColumns(input, deps.encryptionKey);
  return inLockedOrganization(deps, async (tx) => {
    const current = await findAccount(tx, accountId);
    assertOneTlsMode({ use_tls: input.use_tls ?? current.useTls, use_ssl: input.use_ssl ?? current.useSsl });
    assertPasswordResent(input, current);
    if (input.is_default === false && current.isDefault) {
      throw validationFailed({ is_default: ['The workspace needs a default account: make another account the default instead.'] });
    }
    const becomesDefault = input.is_default === true && !current.isDefault;
    if (becomesDefault) await unsetDefault(tx);
    const account = await tx.emailAccount.update({
      where: { id: current.id },
      data: { ...columns, ...(becomesDefault ? { isDefault: true } : {}) },
    });
    return toEmailAccountDto(account);
  });
}

/** Deletes an account; when it was the default, the oldest remaining account takes over. */
export async function deleteEmailAccount(deps: EmailAccountDeps, accountId: string): Promise<void> {
  await inLockedOrganization(deps, async (tx) => {
    const current = await findAccount(tx, accountId);
    await tx.emailAccount.delete({ where: { id: current.id } });
    if (!current.isDefault) return;
    const successor = await tx.emailAccount.findFirst({ orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
    if (successor) await tx.emailAccount.update({ where: { id: successor.id }, data: { isDefault: true } });
  });
}

/**
 * Sends one test message through the account, synchronously (also when it is inactive). A failure is a generic 502:
 * only the failure category and SMTP reply code reach the log, never the server's text or the credentials.
 */
export async function testEmailAccount(
  deps: EmailAccountDeps & { log: { warn(obj: object, msg: string): void } },
  accountId: string,
  recipient: string,
): Promise<{ detail: string }> {
  const account = await findAccount(deps.db, accountId);
  if (account.passwordEncrypted && !deps.encryptionKey) throw encryptionKeyMissing();
  const message = renderEmail({
    subject: 'Test message from Workspace CRM',
    paragraphs: [`This is a test of the email account "${account.name}" of the workspace "${deps.organization.name}". It works.`],
  });
  try {
    await sendMail(settingsOfAccount(account, deps.encryptionKey), { to: recipient, ...message }, { publicOnly: !deps.allowPrivateHosts });
  } catch (error) {
    if (!(error instanceof SmtpError)) throw error;
    deps.log.warn({ emailAccountId: account.id, category: error.category, responseCode: error.responseCode }, 'SMTP test send failed');
    throw badGateway('smtp_failed', 'The SMTP server could not be reached, refused the login or refused the message.');
  }
  return { detail: 'The SMTP server accepted the test message.' };
}

type Log = { warn(obj: object, msg: string): void };

/** A workspace's own SMTP accounts; every method works in the tenant it is given, through its scoped client. */
export function createEmailAccountService(settings: Pick<EmailAccountDeps, 'encryptionKey' | 'allowPrivateHosts'>) {
  const deps = (tenant: Tenant): EmailAccountDeps => ({ ...settings, db: tenant.db, organization: tenant.organization });
  return {
    list: async (tenant: Tenant, page: PageRequest): Promise<Page<EmailAccountDto>> =>
      pageOfDtos(await listEmailAccounts(tenant.db, page), page.limit, toEmailAccountDto),
    get: (tenant: Tenant, accountId: string) => getEmailAccount(tenant.db, accountId),
    create: (tenant: Tenant, input: EmailAccountCreate) => createEmailAccount(deps(tenant), input),
    update: (tenant: Tenant, accountId: string, input: EmailAccountUpdate) => updateEmailAccount(deps(tenant), accountId, input),
    delete: (tenant: Tenant, accountId: string) => deleteEmailAccount(deps(tenant), accountId),
    test: (tenant: Tenant, accountId: string, recipient: string, log: Log) =>
      testEmailAccount({ ...deps(tenant), log }, accountId, recipient),
  };
}
