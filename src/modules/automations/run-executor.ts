// Executes one automation's action for one event and reduces whatever happens to a storable outcome.
import type { Automation } from '../../generated/prisma/client.js';
import type { TenantDb } from '../../db/tenant-scope.js';
import { decryptSecret } from '../../lib/crypto.js';
import { ActionError, ActionSkipped } from './action-error.js';
import type { EventPayload } from './dispatch.js';
import type { SendEmailConfig } from './schemas.js';
import { sendEmailAction } from './send-email.js';
import { deliverWebhook } from './webhook.js';

/** What the webhook action keeps in `action_config`: the secret only as AES-256-GCM ciphertext. */
export interface StoredWebhookConfig {
  url: string;
  secret_encrypted?: string;
  /** The secret a rotation replaced, still signing until `previous_secret_expires_at` (an ISO instant). */
  previous_secret_encrypted?: string;
  previous_secret_expires_at?: string;
}

/** The server settings an action obeys. */
export interface ActionSettings {
  encryptionKey: Buffer | null;
  allowPrivateTargets: boolean;
  /** AUTOMATION_EMAILS_PER_HOUR: send_email messages a workspace may send in any hour. */
  automationEmailsPerHour: number;
  /** EMAIL_SMTP_ALLOW_PRIVATE: otherwise a workspace's own account may only reach public addresses. */
  smtpAllowPrivate: boolean;
}

export interface ActionDeps extends ActionSettings {
  /** The tenant client of the run's organization: the sending account, the policy's members and ledger. */
  db: TenantDb;
  log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
}

export type ActionOutcome =
  | { status: 'success' }
  | { status: 'skipped'; errorMessage: string }
  | { status: 'failed'; errorMessage: string; retryable: boolean };

function decryptWebhookSecret(encrypted: string, key: Buffer | null): string {
  const undecryptable = new ActionError('The webhook secret cannot be decrypted: EMAIL_ENCRYPTION_KEY is missing or has changed.', false);
  if (!key) throw undecryptable;
  try {
    return decryptSecret(encrypted, key);
  } catch {
    throw undecryptable;
  }
}

/** The secrets signing a delivery now: the current one, and the replaced one until its overlap ends. */
function webhookSecrets(config: StoredWebhookConfig, key: Buffer | null): string[] {
  if (!config.secret_encrypted) return [];
  const secrets = [decryptWebhookSecret(config.secret_encrypted, key)];
  const overlapEnds = config.previous_secret_expires_at ? Date.parse(config.previous_secret_expires_at) : 0;
  if (config.previous_secret_encrypted && overlapEnds > Date.now()) {
    secrets.push(decryptWebhookSecret(config.previous_secret_encrypted, key));
  }
  return secrets;
}

/**
 * A run as an action sees it: its id, and the id its webhook delivery carries as `webhook-id`: the event's (the same
 * for every rule and every retry of one event, and the feed's event id), the run's own on a test run.
 */
export interface RunIdentity {
  id: string;
  deliveryId: string;
}

/** What an action reads of its rule. */
export type ActionRule = Pick<Automation, 'id' | 'name' | 'actionType' | 'actionConfig'>;

async function runAction(automation: ActionRule, run: RunIdentity, payload: EventPayload, deps: ActionDeps): Promise<void> {
  const runId = run.id;
  if (automation.actionType === 'send_email') {
    const config = automation.actionConfig as unknown as SendEmailConfig;
    return sendEmailAction(config, { automationName: automation.name, runId, payload }, deps);
  }
  const config = automation.actionConfig as unknown as StoredWebhookConfig;
  return deliverWebhook(
    {
      url: config.url,
      secrets: webhookSecrets(config, deps.encryptionKey),
      body: JSON.stringify(payload),
      event: payload.event,
      deliveryId: run.deliveryId,
    },
    deps.allowPrivateTargets,
  );
}

/** Never throws: an unexpected error is logged and stored as a generic, final failure. */
export async function executeAction(
  automation: ActionRule,
  run: RunIdentity,
  payload: EventPayload,
  deps: ActionDeps,
): Promise<ActionOutcome> {
  const runId = run.id;
  try {
    await runAction(automation, run, payload, deps);
    return { status: 'success' };
  } catch (error) {
    if (error instanceof ActionSkipped) return { status: 'skipped', errorMessage: error.message };
    if (error instanceof ActionError) return { status: 'failed', errorMessage: error.message, retryable: error.retryable };
    deps.log.error({ err: error, automationId: automation.id, runId }, 'automation action crashed');
    return { status: 'failed', errorMessage: 'The action failed unexpectedly.', retryable: false };
  }
}
