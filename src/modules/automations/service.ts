// Automation rules (create, list, read), the synchronous test run and the run history, all within one organization.
import { randomUUID } from 'node:crypto';
import type { Automation, AutomationRun, Prisma } from '../../generated/prisma/client.js';
import { encryptSecret } from '../../lib/crypto.js';
import { afterPosition, newestFirst, pageOfDtos, type Page, type PageRequest } from '../../lib/pagination.js';
import { badRequest, notFound, validationFailed } from '../../lib/problem.js';
import type { Tenant } from '../../db/tenant.js';
import { eventNameOf, triggerOf, type EventPayload } from './dispatch.js';
import { executeAction, type ActionDeps, type ActionSettings, type StoredWebhookConfig } from './run-executor.js';
import type { AutomationCreate, AutomationDto, AutomationRunDto, AutomationTest, SendEmailConfig, WebhookConfigInput } from './schemas.js';
import { webhookSecretProblem, webhookUrlProblem } from './webhook.js';

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
    created_at: automation.createdAt.toISOString(),
    updated_at: automation.updatedAt.toISOString(),
  };
}

export function toRunDto(run: AutomationRun): AutomationRunDto {
  return {
    id: run.id,
    automation_id: run.automationId,
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

/** The webhook settings as stored: URL checked for obviously private targets, secret encrypted. */
function storedWebhookConfig(
  input: WebhookConfigInput,
  settings: { encryptionKey: Buffer | null; allowPrivateTargets: boolean },
): StoredWebhookConfig {
  const urlProblem = webhookUrlProblem(input.url, settings.allowPrivateTargets);
  if (urlProblem) throw validationFailed({ 'action_config.url': [urlProblem] });
  if (input.secret === undefined) return { url: input.url };
  const secretProblem = webhookSecretProblem(input.secret);
  if (secretProblem) throw validationFailed({ 'action_config.secret': [secretProblem] });
  if (!settings.encryptionKey) {
    throw badRequest('encryption_key_missing', 'Webhook secrets cannot be stored: the server has no EMAIL_ENCRYPTION_KEY configured.', {
      'action_config.secret': ['Cannot be stored without a server-side encryption key.'],
    });
  }
  return { url: input.url, secret_encrypted: encryptSecret(input.secret, settings.encryptionKey) };
}

/** Saves a rule; runs nothing. */
export function createAutomation(
  tenant: Tenant,
  input: AutomationCreate,
  settings: { encryptionKey: Buffer | null; allowPrivateTargets: boolean },
): Promise<Automation> {
  const actionConfig =
    input.action_type === 'webhook'
      ? storedWebhookConfig(input.action_config, settings)
      : { to: input.action_config.to, subject: input.action_config.subject, body: input.action_config.body };
  return tenant.db.automation.create({
    data: {
      organizationId: tenant.organization.id,
      name: input.name,
      trigger: triggerOf(input.trigger),
      actionType: input.action_type,
      actionConfig: asJson(actionConfig),
      isActive: input.is_active ?? true,
    },
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
  const outcome = await executeAction(automation, runId, payload, deps);
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
    create: async (tenant: Tenant, input: AutomationCreate) =>
      toAutomationDto(
        await createAutomation(tenant, input, { encryptionKey: deps.encryptionKey, allowPrivateTargets: deps.allowPrivateTargets }),
        true,
      ),
    test: async (tenant: Tenant, id: string, input: AutomationTest, log: ActionDeps['log']) => {
      const run = await testAutomation(tenant, id, input, { ...deps, db: tenant.db, log });
      return { status: run.status, run: toRunDto(run) };
    },
    listRuns: async (tenant: Tenant, page: PageRequest, automationId?: string): Promise<Page<AutomationRunDto>> =>
      pageOfDtos(await listRuns(tenant, page, automationId), page.limit, toRunDto),
  };
}
