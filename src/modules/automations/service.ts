// Automation rules (create, list, read), the synchronous test run and the run history, all within one organization.
import { randomUUID } from 'node:crypto';
import { Prisma, type Automation, type AutomationRun } from '../../generated/prisma/client.js';
import { encryptSecret } from '../../lib/crypto.js';
import { changedSince, nextVersion, versionMatches, type ExpectedVersions } from '../../lib/etag.js';
import { afterPosition, newestFirst, pageOfDtos, type Page, type PageRequest } from '../../lib/pagination.js';
import { badRequest, conflict, notFound, validationFailed } from '../../lib/problem.js';
import type { Tenant } from '../../db/tenant.js';
import { recordAudit, type AuditAction, type AuditContext, type AuditWriter } from '../../audit/audit-log.js';
import { checkCondition } from './condition.js';
import { eventNameOf, triggerOf, type EventPayload } from './dispatch.js';
import { executeAction, type ActionDeps, type ActionSettings, type StoredWebhookConfig } from './run-executor.js';
import type {
  AutomationCreate,
  AutomationDto,
  AutomationRunDto,
  AutomationTest,
  AutomationUpdate,
  SendEmailConfig,
  WebhookConfigInput,
  WebhookSecretRotation,
} from './schemas.js';
import { generateWebhookSecret, WEBHOOK_SECRET_OVERLAP_MS, webhookSecretProblem, webhookUrlProblem } from './webhook.js';

const automationNotFound = () => notFound('Automation not found.', 'automation_not_found');

const asJson = (value: object) => value as Prisma.InputJsonObject;

/**
 * The rule as the API shows it. Without `fullWebhookUrl` (callers who cannot manage automations) a webhook URL is
 * reduced to its origin: webhook paths often carry credentials (Slack's, for one).
 */
export function toAutomationDto(automation: Automation, fullWebhookUrl: boolean): AutomationDto {
  let actionConfig: AutomationDto['action_config'];
  if (automation.actionType === 'webhook') {
    const stored = automation.actionConfig as unknown as StoredWebhookConfig;
    actionConfig = { url: fullWebhookUrl ? stored.url : new URL(stored.url).origin, has_secret: Boolean(stored.secret_encrypted) };
  } else {
    const stored = automation.actionConfig as unknown as SendEmailConfig;
    actionConfig = { to: stored.to, subject: stored.subject, body: stored.body };
  }
  return {
    id: automation.id,
    name: automation.name,
    trigger: eventNameOf(automation.trigger),
    action_type: automation.actionType,
    action_config: actionConfig,
    is_active: automation.isActive,
    condition: automation.condition ?? null,
    created_at: automation.createdAt.toISOString(),
    updated_at: automation.updatedAt.toISOString(),
  };
}

export function toRunDto(run: AutomationRun): AutomationRunDto {
  return {
    id: run.id,
    automation_id: run.automationId,
    event_id: run.eventId,
    trigger: eventNameOf(run.trigger),
    status: run.status,
    payload: run.payload as unknown as AutomationRunDto['payload'],
    error_message: run.errorMessage,
    attempts: run.attempts,
    created_at: run.createdAt.toISOString(),
    started_at: run.startedAt?.toISOString() ?? null,
    finished_at: run.finishedAt?.toISOString() ?? null,
  };
}

/** The key secrets are encrypted with, or 400 `encryption_key_missing` naming the field. */
function requireEncryptionKey(key: Buffer | null, field: string): Buffer {
  if (key) return key;
  throw badRequest('encryption_key_missing', 'Webhook secrets cannot be stored: the server has no EMAIL_ENCRYPTION_KEY configured.', {
    [field]: ['Cannot be stored without a server-side encryption key.'],
  });
}

/** The webhook settings as stored (URL checked for obviously private targets, secret encrypted), and a generated secret to show once. */
function storedWebhookConfig(
  input: WebhookConfigInput,
  settings: { encryptionKey: Buffer | null; allowPrivateTargets: boolean },
): { stored: StoredWebhookConfig; generated: string | null } {
  const urlProblem = webhookUrlProblem(input.url, settings.allowPrivateTargets);
  if (urlProblem) throw validationFailed({ 'action_config.url': [urlProblem] });
  if (input.generate_secret && input.secret !== undefined) {
    throw validationFailed({ 'action_config.generate_secret': ['Give either `secret` or `generate_secret: true`, not both.'] });
  }
  const generated = input.generate_secret ? generateWebhookSecret() : null;
  const secret = generated ?? input.secret;
  if (secret === undefined) return { stored: { url: input.url }, generated: null };
  const secretProblem = webhookSecretProblem(secret);
  if (secretProblem) throw validationFailed({ 'action_config.secret': [secretProblem] });
  const key = requireEncryptionKey(settings.encryptionKey, generated ? 'action_config.generate_secret' : 'action_config.secret');
  return { stored: { url: input.url, secret_encrypted: encryptSecret(secret, key) }, generated };
}

const recordAutomation = (tx: AuditWriter, tenant: Tenant, audit: AuditContext, action: AuditAction, id: string) =>
  recordAudit(tx, { ...audit, action, target: { type: 'automation', id }, organizationId: tenant.organization.id });

/** Saves a rule (runs nothing); with `generate_secret`, the generated secret comes back this once. */
export async function createAutomation(
  tenant: Tenant,
  input: AutomationCreate,
  settings: { encryptionKey: Buffer | null; allowPrivateTargets: boolean },
  audit: AuditContext,
): Promise<{ automation: Automation; generatedSecret: string | null }> {
  const condition = await checkCondition(tenant.db, input.trigger, input.condition);
  const webhook = input.action_type === 'webhook' ? storedWebhookConfig(input.action_config, settings) : null;
  const actionConfig =
    input.action_type === 'send_email'
      ? { to: input.action_config.to, subject: input.action_config.subject, body: input.action_config.body }
      : (webhook?.stored ?? {});
  // A rule sends workspace data out: who created it (a user or a key) is audited with it.
  const automation = await tenant.db.$transaction(async (tx) => {
    const created = await tx.automation.create({
      data: {
        organizationId: tenant.organization.id,
        name: input.name,
        trigger: triggerOf(input.trigger),
        actionType: input.action_type,
        actionConfig: asJson(actionConfig),
        isActive: input.is_active ?? true,
        condition: condition ?? Prisma.DbNull,
      },
    });
    await recordAutomation(tx, tenant, audit, 'automation.created', created.id);
    return created;
  });
  return { automation, generatedSecret: webhook?.generated ?? null };
}

/**
 * Replaces a webhook rule's secret by a generated one; the replaced secret keeps signing beside it for
 * WEBHOOK_SECRET_OVERLAP_MS. With `expected` (If-Match), only a rule at one of those versions: else 412, checked before
 * anything else, and again by the write's condition. A rotation racing another one (or any change of the rule) is never
 * a lost secret: 412 with an If-Match (the version it named is gone), else 409. Answers the rule's new version too.
 */
export async function rotateWebhookSecret(
  tenant: Tenant,
  id: string,
  encryptionKey: Buffer | null,
  audit: AuditContext,
  expected: ExpectedVersions = undefined,
): Promise<{ rotation: WebhookSecretRotation; updatedAt: Date }> {
  const automation = await getAutomation(tenant, id);
  if (!versionMatches(expected, automation.updatedAt)) throw changedSince();
  if (automation.actionType !== 'webhook') {
    throw badRequest('automation_not_webhook', 'Only webhook rules have a signing secret to rotate.');
  }
  const key = requireEncryptionKey(encryptionKey, 'secret');
  const current = automation.actionConfig as unknown as StoredWebhookConfig;
  const secret = generateWebhookSecret();
  const previousExpiresAt = current.secret_encrypted ? new Date(Date.now() + WEBHOOK_SECRET_OVERLAP_MS).toISOString() : null;
  const rotated: StoredWebhookConfig = {
    url: current.url,
    secret_encrypted: encryptSecret(secret, key),
    ...(current.secret_encrypted && previousExpiresAt
      ? { previous_secret_encrypted: current.secret_encrypted, previous_secret_expires_at: previousExpiresAt }
      : {}),
  };
  const updatedAt = nextVersion(automation.updatedAt);
  await tenant.db.$transaction(async (tx) => {
    // A new version (the rule's ETag) even within the millisecond of the one it replaces: the condition holds it still.
    const { count } = await tx.automation.updateMany({
      where: { id, updatedAt: automation.updatedAt },
      data: { actionConfig: asJson(rotated), updatedAt },
    });
    if (count === 0) {
      throw Array.isArray(expected)
        ? changedSince()
        : conflict('automation_changed', 'The rule changed meanwhile (another rotation?); read it again and retry.');
    }
    await recordAutomation(tx, tenant, audit, 'automation.secret_rotated', id);
  });
  return { rotation: { secret, previous_secret_expires_at: previousExpiresAt }, updatedAt };
}

type WebhookSettings = { encryptionKey: Buffer | null; allowPrivateTargets: boolean };

/**
 * The stored action settings a PATCH's `action_config` gives, checked against the rule's own action type (which does
 * not change). A webhook's secret (and a rotation's overlap) is kept unless the input names a new one.
 */
function updatedActionConfig(
  automation: Automation,
  input: NonNullable<AutomationUpdate['action_config']>,
  settings: WebhookSettings,
): { stored: object; generated: string | null } {
  if (automation.actionType === 'send_email') {
    if (!('to' in input)) throw validationFailed({ action_config: ['A send_email rule takes {to, subject, body}.'] });
    return { stored: { to: input.to, subject: input.subject, body: input.body }, generated: null };
  }
  if (!('url' in input)) throw validationFailed({ action_config: ['A webhook rule takes {url, secret?, generate_secret?}.'] });
  const { stored, generated } = storedWebhookConfig(input, settings);
  if (stored.secret_encrypted) return { stored, generated };
  const { url: _replaced, ...secrets } = automation.actionConfig as unknown as StoredWebhookConfig;
  return { stored: { ...secrets, url: stored.url }, generated: null };
}

/**
 * Changes the fields a PATCH gives (the rest keep their value). With `expected` (If-Match), only a rule at one of
 * those versions: 412 otherwise, checked first and again by the write's condition, so a change racing another one
 * is never lost silently (412 with If-Match, 409 without).
 */
export async function updateAutomation(
  tenant: Tenant,
  id: string,
  input: AutomationUpdate,
  settings: WebhookSettings,
  audit: AuditContext,
  expected: ExpectedVersions = undefined,
): Promise<{ automation: Automation; generatedSecret: string | null }> {
  const automation = await getAutomation(tenant, id);
  if (!versionMatches(expected, automation.updatedAt)) throw changedSince();
  const action = input.action_config === undefined ? null : updatedActionConfig(automation, input.action_config, settings);
  // The condition the rule will have, checked against the trigger it will have: a new trigger must fit a kept condition.
  const changesCondition = input.condition !== undefined || input.trigger !== undefined;
  const condition = changesCondition
    ? await checkCondition(
        tenant.db,
        input.trigger ?? eventNameOf(automation.trigger),
        input.condition !== undefined ? input.condition : automation.condition,
      )
    : undefined;
  const updatedAt = nextVersion(automation.updatedAt);
  const updated = await tenant.db.$transaction(async (tx) => {
    const { count } = await tx.automation.updateMany({
      where: { id, updatedAt: automation.updatedAt },
      data: {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.trigger !== undefined ? { trigger: triggerOf(input.trigger) } : {}),
        ...(input.is_active !== undefined ? { isActive: input.is_active } : {}),
        ...(action ? { actionConfig: asJson(action.stored) } : {}),
        ...(input.condition !== undefined ? { condition: condition ?? Prisma.DbNull } : {}),
        updatedAt,
      },
    });
    if (count === 0) {
      throw Array.isArray(expected)
        ? changedSince()
        : conflict('automation_changed', 'The rule changed meanwhile; read it again and retry.');
    }
    await recordAutomation(tx, tenant, audit, 'automation.updated', id);
    return tx.automation.findUniqueOrThrow({ where: { id } });
  });
  return { automation: updated, generatedSecret: action?.generated ?? null };
}

/**
 * Deletes the rule; its runs stay (with its id in `automation_id`), and a run still queued finishes as `skipped`.
 * With `expected` (If-Match), only a rule at one of those versions (412 otherwise).
 */
export async function deleteAutomation(
  tenant: Tenant,
  id: string,
  audit: AuditContext,
  expected: ExpectedVersions = undefined,
): Promise<void> {
  const automation = await getAutomation(tenant, id);
  if (!versionMatches(expected, automation.updatedAt)) throw changedSince();
  await tenant.db.$transaction(async (tx) => {
    const where = Array.isArray(expected) ? { id, updatedAt: automation.updatedAt } : { id };
    const { count } = await tx.automation.deleteMany({ where });
    if (count === 0) throw Array.isArray(expected) ? changedSince() : automationNotFound();
    await recordAutomation(tx, tenant, audit, 'automation.deleted', id);
  });
}

export function listAutomations(tenant: Tenant, page: PageRequest): Promise<Automation[]> {
  return tenant.db.automation.findMany({ where: afterPosition(page.after), orderBy: newestFirst, take: page.limit + 1 });
}

export async function getAutomation(tenant: Tenant, id: string): Promise<Automation> {
  const automation = await tenant.db.automation.findUnique({ where: { id } });
  if (!automation) throw automationNotFound();
  return automation;
}

/**
 * Executes the rule's action now, whether the rule is active or not (a real send, not a dry run), and records the
 * run as `success`, `failed` or `skipped` (refused by the sending policy); a failed action is a result, not an error. No retries here: the
 * caller sees the
 * outcome of this one attempt.
 */
export async function testAutomation(tenant: Tenant, id: string, input: AutomationTest, deps: ActionDeps): Promise<AutomationRun> {
  const automation = await getAutomation(tenant, id);
  const payload: EventPayload = {
    event: eventNameOf(automation.trigger),
    organization_id: tenant.organization.id,
    data: input.data ?? {},
    occurred_at: new Date().toISOString(),
    test: true,
  };
  const runId = randomUUID();
  const startedAt = new Date();
  const outcome = await executeAction(automation, { id: runId, deliveryId: runId }, payload, deps);
  return tenant.db.automationRun.create({
    data: {
      id: runId,
      organizationId: tenant.organization.id,
      automationId: automation.id,
      trigger: automation.trigger,
      payload: asJson(payload),
      status: outcome.status,
      errorMessage: outcome.status === 'success' ? null : outcome.errorMessage,
      attempts: 1,
      startedAt,
      finishedAt: new Date(),
    },
  });
}

/** Runs of the organization, or of one of its rules (404 for a rule of another organization). */
export async function listRuns(tenant: Tenant, page: PageRequest, automationId?: string): Promise<AutomationRun[]> {
  if (automationId !== undefined) await getAutomation(tenant, automationId);
  return tenant.db.automationRun.findMany({
    where: { ...(automationId !== undefined ? { automationId } : {}), ...afterPosition(page.after) },
    orderBy: newestFirst,
    take: page.limit + 1,
  });
}

/** Automation rules, their test runs and run history; every method works in the tenant it is given. */
export function createAutomationService(deps: ActionSettings) {
  /** Callers without MANAGE_AUTOMATIONS see only a webhook URL's origin. */
  const full = (tenant: Tenant) => tenant.can('MANAGE_AUTOMATIONS');
  return {
    list: async (tenant: Tenant, page: PageRequest): Promise<Page<AutomationDto>> =>
      pageOfDtos(await listAutomations(tenant, page), page.limit, (automation) => toAutomationDto(automation, full(tenant))),
    get: async (tenant: Tenant, id: string) => toAutomationDto(await getAutomation(tenant, id), full(tenant)),
    create: async (tenant: Tenant, input: AutomationCreate, audit: AuditContext) => {
      const settings = { encryptionKey: deps.encryptionKey, allowPrivateTargets: deps.allowPrivateTargets };
      const { automation, generatedSecret } = await createAutomation(tenant, input, settings, audit);
      const dto = toAutomationDto(automation, true);
      return generatedSecret ? { ...dto, action_config: { ...dto.action_config, secret: generatedSecret } } : dto;
    },
    update: async (tenant: Tenant, id: string, input: AutomationUpdate, audit: AuditContext, expected?: ExpectedVersions) => {
      const settings = { encryptionKey: deps.encryptionKey, allowPrivateTargets: deps.allowPrivateTargets };
      const { automation, generatedSecret } = await updateAutomation(tenant, id, input, settings, audit, expected);
      const dto = toAutomationDto(automation, true);
      return generatedSecret ? { ...dto, action_config: { ...dto.action_config, secret: generatedSecret } } : dto;
    },
    delete: (tenant: Tenant, id: string, audit: AuditContext, expected?: ExpectedVersions) => deleteAutomation(tenant, id, audit, expected),
    rotateSecret: (tenant: Tenant, id: string, audit: AuditContext, expected?: ExpectedVersions) =>
      rotateWebhookSecret(tenant, id, deps.encryptionKey, audit, expected),
    test: async (tenant: Tenant, id: string, input: AutomationTest, log: ActionDeps['log']) => {
      const run = await testAutomation(tenant, id, input, { ...deps, db: tenant.db, log });
      return { status: run.status, run: toRunDto(run) };
    },
    listRuns: async (tenant: Tenant, page: PageRequest, automationId?: string): Promise<Page<AutomationRunDto>> =>
      pageOfDtos(await listRuns(tenant, page, automationId), page.limit, toRunDto),
  };
}

export type AutomationService = ReturnType<typeof createAutomationService>;
