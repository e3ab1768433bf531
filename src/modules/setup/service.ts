// First-run setup: whether it is open, completing it in one transaction, and the SMTP test that stores nothing.
import type { Db } from '../../db/client.js';
import { safeEqual } from '../../lib/crypto.js';
import { hashPassword, passwordProblems } from '../../lib/passwords.js';
import { badGateway, badRequest, forbidden, validationFailed, type FieldErrors } from '../../lib/problem.js';
import { sendMail } from '../../email/mailer.js';
import { renderEmail } from '../../email/templates.js';
import { emailAccountColumns, smtpInputErrors, smtpSettingsOf } from '../../email/smtp-account-input.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';
import type { SetupRequest, SmtpTestRequest } from './schemas.js';

export interface SetupDeps {
  db: Db;
  /** SERVICE_SETUP_TOKEN (null when unset or too short). */
  setupToken: string | null;
  emailEncryptionKey: Buffer | null;
  log: { warn(obj: object, msg: string): void };
}

const setupClosed = () => forbidden('setup_closed', 'Setup has already been completed.');

const INVALID_TOKEN = 'The setup token is not valid.';

/** Setup has run, or someone exists already: either way it must never run (again). */
async function installationInitialized(db: Db): Promise<boolean> {
  const [state, user, organization] = await Promise.all([
    db.installationState.findUnique({ where: { id: 1 }, select: { setupCompletedAt: true } }),
    db.user.findFirst({ select: { id: true } }),
    db.organization.findFirst({ select: { id: true } }),
  ]);
  return Boolean(state?.setupCompletedAt) || user !== null || organization !== null;
}

export async function setupAvailability(deps: Pick<SetupDeps, 'db' | 'setupToken'>): Promise<{ available: boolean }> {
  return { available: deps.setupToken !== null && !(await installationInitialized(deps.db)) };
}

/** 403 unless setup can run; a closed installation says so before anything about the request is judged. */
export async function assertSetupOpen(deps: Pick<SetupDeps, 'db' | 'setupToken'>): Promise<void> {
  if (await installationInitialized(deps.db)) throw setupClosed();
  if (deps.setupToken === null) {
    throw forbidden('setup_unavailable', 'Setup is unavailable: the server has no SERVICE_SETUP_TOKEN of at least 32 characters.');
  }
}

function assertSetupToken(deps: Pick<SetupDeps, 'setupToken'>, presented: string): void {
  // Compared even when unset, so both failures take the same time.
  const matches = safeEqual(presented, deps.setupToken ?? '');
  if (deps.setupToken === null || !matches) throw badRequest('invalid_setup_token', INVALID_TOKEN, { setup_token: [INVALID_TOKEN] });
}

/**
 * Creates the installation admin, the first workspace (owned by that admin) and the optional installation fallback
 * SMTP account, and closes setup, all in one transaction. Callers run assertSetupOpen first for its clearer
 * answers; the transaction alone already guarantees that setup completes at most once.
 */
export async function completeSetup(deps: SetupDeps, input: SetupRequest, audit: AuditContext): Promise<void> {
  assertSetupToken(deps, input.setup_token);
  const errors: FieldErrors = input.smtp ? smtpInputErrors(input.smtp, 'smtp') : {};
  if (input.smtp && !deps.emailEncryptionKey) {
    errors.smtp = ['SMTP settings cannot be stored: the server has no EMAIL_ENCRYPTION_KEY configured.'];
  }
  const problems = passwordProblems(input.password, { username: input.username, email: input.email });
  if (problems.length > 0) errors.password = problems;
  if (Object.keys(errors).length > 0) throw validationFailed(errors);

  const passwordHash = await hashPassword(input.password);
  await deps.db.$transaction(async (tx) => {
    // Claiming row 1 serializes concurrent setups: a second transaction waits on it and then finds setup completed.
    const claimed = await tx.$executeRaw`
      INSERT INTO installation_state (id, setup_completed_at) VALUES (1, now())
      ON CONFLICT (id) DO UPDATE SET setup_completed_at = now() WHERE installation_state.setup_completed_at IS NULL`;
    if (claimed !== 1) throw setupClosed();
    if ((await tx.user.findFirst({ select: { id: true } })) || (await tx.organization.findFirst({ select: { id: true } }))) {
      throw setupClosed();
    }
    const admin = await tx.user.create({
      data: {
        username: input.username,
        email: input.email.toLowerCase(),
        passwordHash,
        isSuperuser: true,
        isStaff: true,
        profile: { create: {} },
      },
    });
    const organization = await tx.organization.create({
      data: {
        name: input.organization_name,
        slug: input.organization_slug,
        status: 'active',
        createdById: admin.id,
        memberships: { create: { userId: admin.id, role: 'owner' } },
      },
    });
    if (input.smtp && deps.emailEncryptionKey) {
      // The installation's fallback account: installation settings, not a workspace's account.
      await tx.installationEmailAccount.create({ data: emailAccountColumns(input.smtp, deps.emailEncryptionKey) });
    }
    await recordAudit(tx, { ...audit, action: 'setup.completed', target: { type: 'user', id: admin.id }, organizationId: organization.id });
  });
}

/**
 * Sends one message with the submitted settings and stores nothing; any SMTP failure is a generic 502.
 * Callers run assertSetupOpen first (the route does, before validating the body).
 */
export async function sendSmtpTest(deps: SetupDeps, input: SmtpTestRequest): Promise<void> {
  assertSetupToken(deps, input.setup_token);
  const errors = smtpInputErrors(input.smtp, 'smtp');
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
  const message = renderEmail({
    subject: 'Workspace CRM: SMTP test',
    paragraphs: ['This message confirms that the SMTP settings entered during setup can send email.'],
  });
  try {
    await sendMail(smtpSettingsOf(input.smtp), { to: input.recipient, ...message });
  } catch (error) {
    // The message names only the failure category and reply code, never the host's credentials.
    deps.log.warn({ reason: error instanceof Error ? error.message : 'unknown' }, 'SMTP test failed');
    throw badGateway('smtp_failed', 'The SMTP server could not be reached, refused the login, or refused the message.');
  }
}

/** First-run setup; `log` is the request's logger (what setup warns about belongs to that request's lines). */
export function createSetupService(deps: Omit<SetupDeps, 'log'>) {
  return {
    availability: () => setupAvailability(deps),
    assertOpen: () => assertSetupOpen(deps),
    complete: (input: SetupRequest, audit: AuditContext, log: SetupDeps['log']) => completeSetup({ ...deps, log }, input, audit),
    testSmtp: (input: SmtpTestRequest, log: SetupDeps['log']) => sendSmtpTest({ ...deps, log }, input),
  };
}
