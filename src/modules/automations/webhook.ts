// The webhook action: POSTs the event JSON to a checked public address over kept connections, signed per Standard Webhooks (and the legacy header), within 5 seconds.
import { createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { ActionError } from './action-error.js';
import { bareHostname, isObviouslyPrivateHost, isPublicAddress, resolveHost, type ResolvedAddress } from './network-policy.js';

/** Whole delivery budget: DNS, connection, TLS, request and response. */
export const WEBHOOK_TIMEOUT_MS = 5000;

export interface WebhookDelivery {
  url: string;
  /** The signing secrets: the current one first, then the one it replaced while the rotation overlap lasts. */
  secrets: readonly string[];
  /** The exact bytes sent (and signed). */
  body: string;
  event: string;
  /** The event's id (a test run's own id): the same across retries, so receivers can drop duplicates. */
  deliveryId: string;
}

/**
 * Legacy `X-Webhook-Signature` value: hex HMAC-SHA256 of the raw body with the rule's secret as given. Deprecated:
 * it dates nothing, so a captured delivery replays; sent until LEGACY_SIGNATURE_UNTIL beside the Standard Webhooks headers.
 */
/** The announced end of the deprecated `X-Webhook-Signature` (docs/integrators.md, OpenAPI `webhooks`). */
export const LEGACY_SIGNATURE_UNTIL = '2027-06-01';

export const webhookSignature = (body: string, secret: string): string =>
  `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;

const WHSEC_PREFIX = 'whsec_';

/** After a rotation the replaced secret signs beside the new one this long, so receivers can switch without a gap. */
export const WEBHOOK_SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000;

/** A server-generated secret in the specification's form: `whsec_` and the base64 of 32 random bytes. */
export const generateWebhookSecret = (): string => `${WHSEC_PREFIX}${randomBytes(32).toString('base64')}`;

/** Why a secret cannot sign, or null: a `whsec_` secret must carry base64 (the specification's form). */
export function webhookSecretProblem(secret: string): string | null {
  if (!secret.startsWith(WHSEC_PREFIX)) return null;
  const encoded = secret.slice(WHSEC_PREFIX.length);
  const valid = encoded.length > 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(encoded) && encoded.length % 4 === 0;
  return valid ? null : 'A `whsec_` secret must be followed by base64 (Standard Webhooks); other secrets sign with their UTF-8 bytes.';
}

/** The HMAC key: a `whsec_` secret's base64-decoded bytes (as the specification says), any other secret's UTF-8 bytes. */
const signingKey = (secret: string): Buffer =>
  secret.startsWith(WHSEC_PREFIX) ? Buffer.from(secret.slice(WHSEC_PREFIX.length), 'base64') : Buffer.from(secret, 'utf8');

/** Standard Webhooks `webhook-signature`: `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body`. */
export const standardWebhookSignature = (id: string, timestamp: number, body: string, secret: string): string =>
  `v1,${createHmac('sha256', signingKey(secret)).update(`${id}.${timestamp}.${body}`, 'utf8').digest('base64')}`;

/** The signing headers of one attempt: dated now, so a receiver refuses a delivery replayed later. */
function signatureHeaders(delivery: WebhookDelivery): Record<string, string> {
  const timestamp = Math.floor(Date.now() / 1000);
  // webhook-id is the event's id: the same across retries of one event, so a receiver can drop duplicates.
  const headers: Record<string, string> = { 'webhook-id': delivery.deliveryId, 'webhook-timestamp': String(timestamp) };
  const [current] = delivery.secrets;
  if (current === undefined) return headers;
  return {
    ...headers,
    // Space-separated signatures (the specification's form): a receiver holding either secret verifies the delivery.
    'webhook-signature': delivery.secrets
      .map((secret) => standardWebhookSignature(delivery.deliveryId, timestamp, delivery.body, secret))
      .join(' '),
    // The deprecated header carries the current secret's signature only.
    'x-webhook-signature': webhookSignature(delivery.body, current),
  };
}

/** Why a webhook URL cannot be saved, or null. Only what is knowable without DNS; the rest is checked per delivery. */
export function webhookUrlProblem(value: string, allowPrivate: boolean): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'Enter a valid URL.';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'Only http and https URLs are allowed.';
  // They would be stored and returned in clear; `secret` is the way to authenticate deliveries.
  if (url.username || url.password) return 'Credentials in the URL are not allowed; use `secret` instead.';
  if (!allowPrivate && isObviouslyPrivateHost(bareHostname(url))) {
    return 'Private, loopback, link-local and other non-public addresses are not allowed.';
  }
  return null;
}

/** Resolves the host and refuses it when any of its addresses is not public (unless private targets are allowed). */
async function resolveTarget(hostname: string, allowPrivate: boolean): Promise<ResolvedAddress> {
  const addresses = await resolveHost(hostname);
  const [first] = addresses;
  if (!first) throw new ActionError('Webhook host name does not resolve.', false);
  if (!allowPrivate && addresses.some((a) => !isPublicAddress(a.address))) {
    throw new ActionError('Webhook target resolves to a private, loopback or otherwise non-public address; refused.', false);
  }
  return first;
}

function rejectOnAbort(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
}

/** How long an idle kept connection stays open: below the 5 s many servers keep one, so they rarely close it first. */
const IDLE_CONNECTION_MS = 4_000;
/** Receivers (origin and checked address) whose connections are kept at once; the least recently used goes first. */
const MAX_KEPT_RECEIVERS = 256;
const agents = new Map<string, http.Agent>();

/**
 * The keep-alive agent of one receiver: a burst of deliveries reuses its connections instead of opening one each. Per
 * origin and checked address, so a kept connection only ever carries deliveries to the address it was checked for
 * (a later DNS answer gets an agent, and connections, of its own).
 */
function agentFor(url: URL, target: ResolvedAddress): http.Agent {
  const key = `${url.protocol}//${url.host}@${target.address}`;
  const kept = agents.get(key);
  agents.delete(key);
  const agent =
    kept ??
    new (url.protocol === 'https:' ? https.Agent : http.Agent)({ keepAlive: true, timeout: IDLE_CONNECTION_MS, scheduling: 'lifo' });
  agents.set(key, agent);
  const [oldest] = agents.keys();
  if (agents.size > MAX_KEPT_RECEIVERS && oldest !== undefined) {
    agents.get(oldest)?.destroy();
    agents.delete(oldest);
  }
  return agent;
}

/** A kept connection the receiver had closed meanwhile: the request never reached it, so it is sent again on a new one. */
const closedKeptConnection = (error: unknown) =>
  (error as { reusedSocket?: boolean }).reusedSocket === true &&
  ['ECONNRESET', 'EPIPE'].includes(String((error as { code?: unknown }).code));

/** Sends the request to `target` and resolves with the response status once the (discarded) body has arrived. */
function post(
  url: URL,
  target: ResolvedAddress,
  delivery: WebhookDelivery,
  signal: AbortSignal,
  agent: http.Agent | false,
): Promise<number> {
  // Connect to the address that passed the check, never to a second DNS answer (DNS rebinding).
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if (options.all) callback(null, [target]);
    else callback(null, target.address, target.family);
  };
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(delivery.body)),
    'user-agent': 'WorkspaceCRM-Webhook/1.0',
    'x-webhook-event': delivery.event,
    'x-webhook-delivery': delivery.deliveryId,
    ...signatureHeaders(delivery),
  };
  return new Promise((resolve, reject) => {
    const client = url.protocol === 'https:' ? https : http;
    const request = client.request(url, { method: 'POST', headers, lookup: pinned, agent, signal }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
      response.on('error', reject);
      response.on('close', () => {
        if (!response.complete) reject(new Error('response interrupted'));
      });
    });
    request.on('error', (error) => reject(Object.assign(error, { reusedSocket: request.reusedSocket })));
    request.end(delivery.body);
  });
}

/** Maps a network error to a storable message; the URL and secret never appear in it. */
function networkFailure(error: unknown): ActionError {
  const code = (error as { code?: unknown })?.code;
  switch (code) {
    case 'ECONNREFUSED':
      return new ActionError('Webhook connection refused.', true);
    case 'ENOTFOUND':
      return new ActionError('Webhook host name does not resolve.', false);
    case 'EAI_AGAIN':
      return new ActionError('Webhook host name could not be resolved (temporary DNS failure).', true);
    case 'ECONNRESET':
      return new ActionError('Webhook connection was reset.', true);
  }
  if (typeof code === 'string' && (code.startsWith('ERR_TLS') || code.includes('CERT') || code.startsWith('ERR_SSL'))) {
    return new ActionError('Webhook TLS handshake failed (invalid or untrusted certificate).', false);
  }
  return new ActionError(`Webhook request failed${typeof code === 'string' ? ` (${code})` : ''}.`, true);
}

/**
 * Delivers one event. Success is a 2xx answer; a 3xx is a failure (redirects are not followed: they could lead
 * to a private address); a timeout, refused connection, 408, 429 or 5xx is a retryable failure; other 4xx are final.
 */
export async function deliverWebhook(delivery: WebhookDelivery, allowPrivate: boolean): Promise<void> {
  const url = new URL(delivery.url);
  const signal = AbortSignal.timeout(WEBHOOK_TIMEOUT_MS);
  let status: number;
  try {
    const target = await Promise.race([resolveTarget(bareHostname(url), allowPrivate), rejectOnAbort(signal)]);
    status = await post(url, target, delivery, signal, agentFor(url, target)).catch((error: unknown) => {
      if (closedKeptConnection(error) && !signal.aborted) return post(url, target, delivery, signal, false);
      throw error;
    });
  } catch (error) {
    if (error instanceof ActionError) throw error;
    if (signal.aborted) throw new ActionError(`Webhook timed out after ${WEBHOOK_TIMEOUT_MS / 1000} s.`, true);
    throw networkFailure(error);
  }
  if (status >= 200 && status < 300) return;
  if (status >= 300 && status < 400) throw new ActionError(`Webhook answered HTTP ${status}; redirects are not followed.`, false);
  throw new ActionError(`Webhook answered HTTP ${status}.`, status === 408 || status === 429 || status >= 500);
}
