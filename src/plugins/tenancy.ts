// The `tenant` context's hooks: resolve :organization_id through the caller's membership (404 otherwise), then check the route's
// capability.
import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { forbidden, organizationNotFound } from '../lib/problem.js';
import type { Capability } from '../lib/capabilities.js';
import { isUuid } from '../lib/http-schemas.js';
import { authenticateMember } from '../db/authentication.js';
import { bindApiKeyTenant, bindTenant, type Tenant } from '../db/tenant.js';
import { authenticateApiKey } from '../db/api-key-authentication.js';
import { organizationPool } from '../db/organization-setting.js';
import { hashApiKey, looksLikeApiKey } from '../lib/api-key-format.js';
import { redeemStreamTicket } from '../db/stream-ticket-authentication.js';
import { ticketHash } from '../modules/events/service.js';
import { bearerCredential } from './auth.js';

export type { Tenant };

const twoFactorRequiredHere = () =>
  forbidden(
    'two_factor_required',
    'This workspace requires two-factor sign-in. Turn it on for your account (POST /api/v1/auth/me/two-factor/, then ' +
      'POST /api/v1/auth/me/two-factor/confirm/ with a code from your authenticator app) and try again.',
  );

/** What a tenant route requires beyond membership: a capability, or `member` for anything any member may do. */
export type TenantAccess = Capability | 'member';

export default fp(
  async (app) => {
    app.decorateRequest('tenant', null);
    app.decorateRequest('apiKey', null);

    app.decorate('resolveTenant', async (request: FastifyRequest) => {
      const credential = bearerCredential(request);
      // A stream ticket is this context's credential on the routes that take one, only without an Authorization header.
      const ticket = (request.query as { ticket?: unknown }).ticket;
      if (request.headers.authorization === undefined && typeof ticket === 'string' && request.routeOptions.config.streamTickets) {
        await resolveTicketTenant(request, ticket);
        return;
      }
      // Only routes marked `config.apiKeys` take a key; elsewhere accessClaims answers 403 api_key_not_allowed.
      if (credential && looksLikeApiKey(credential) && request.routeOptions.config.apiKeys) {
        await resolveApiKeyTenant(request, credential);
        return;
      }
      const claims = app.accessClaims(request);
      const { organization_id: organizationId } = request.params as { organization_id?: string };
      // A malformed id still authenticates first: an invalid token is a 401 whatever the path.
      const orgId = organizationId && isUuid(organizationId) ? organizationId.toLowerCase() : null;
      // On the serving role's pool, which the request's own statements use next: a tenant request holds connections
      // of one pool, not one of each. Its membership row is the one the workspace's policy admits.
      const pool = orgId ? organizationPool(app.serving.pool, orgId) : app.serving.pool;
      const { user, membership, twoFactorEnabled } = await authenticateMember(pool, claims, orgId);
      request.currentUser = user;
      if (!membership) throw organizationNotFound();
      // The workspace's own rule, after membership so that non-members still learn nothing but 404.
      if (membership.organization.requireTwoFactor && !twoFactorEnabled) throw twoFactorRequiredHere();
      // Membership is always checked on the primary (a removed member is out at once); a GET's data may come from
      // the replica when it has replayed this user's own last write.
      const reader = request.method === 'GET' ? await app.readHandles(user.id) : null;
      request.tenant = bindTenant(reader?.db ?? app.serving.db, reader?.pool ?? app.serving.pool, membership);
    });

    /** A key reaches its own workspace only (404 elsewhere, as for a non-member); its data is always read on the primary. */
    async function resolveApiKeyTenant(request: FastifyRequest, key: string): Promise<void> {
      const identity = await authenticateApiKey(app.pg, hashApiKey(key));
      const { organization_id: organizationId } = request.params as { organization_id?: string };
      if (organizationId?.toLowerCase() !== identity.organization.id) throw organizationNotFound();
      request.apiKey = { id: identity.id, name: identity.name, prefix: identity.prefix };
      request.tenant = bindApiKeyTenant(app.serving.db, app.serving.pool, identity.organization, identity.capabilities);
    }

    /**
     * A ticket (single use: redeeming deletes it) acts as its holder, checked again now: the member (their role's
     * capabilities) or the API key (its own). Its workspace only, read on the primary.
     */
    async function resolveTicketTenant(request: FastifyRequest, ticket: string): Promise<void> {
      const { organization_id: organizationId } = request.params as { organization_id?: string };
      if (!organizationId || !isUuid(organizationId)) throw organizationNotFound();
      const holder = await redeemStreamTicket(app.pg, ticketHash(ticket), organizationId.toLowerCase());
      if (holder.kind === 'member') {
        request.tenant = bindTenant(app.serving.db, app.serving.pool, holder);
        return;
      }
      request.apiKey = { id: holder.id, name: holder.name, prefix: holder.prefix };
      request.tenant = bindApiKeyTenant(app.serving.db, app.serving.pool, holder.organization, holder.capabilities);
    }

    app.decorate('capabilityCheck', (capability: Capability) => async (request: FastifyRequest) => {
      if (!requireTenant(request).can(capability)) {
        throw forbidden('permission_denied', `Your role in this organization does not allow this action (${capability}).`);
      }
    });
  },
  { name: 'tenancy', dependencies: ['db', 'auth', 'read-replica'] },
);

/** The resolved tenant of a route in the `tenant` context. */
export function requireTenant(request: FastifyRequest): Tenant {
  if (!request.tenant) throw organizationNotFound();
  return request.tenant;
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * onRequest hook of the `tenant` context: authenticates the Bearer token (401) and resolves the organization in the
     * path through the caller's membership (404 unless a member of the active organization) in one query.
     */
    resolveTenant: (request: FastifyRequest) => Promise<void>;
    /** A route's onRequest hook (after `resolveTenant`): 403 unless the caller's role has `capability`. */
    capabilityCheck: (capability: Capability) => (request: FastifyRequest) => Promise<void>;
  }
  interface FastifyRequest {
    tenant: Tenant | null;
    /** The workspace API key a request authenticated with (then `currentUser` is null). */
    apiKey: { id: string; name: string; prefix: string } | null;
  }
  interface FastifyContextConfig {
    /** Tenant routes only: workspace API keys may call this route (the CRM endpoints); 403 api_key_not_allowed otherwise. */
    apiKeys?: boolean;
    /**
     * Tenant routes only: a stream ticket (`?ticket=`, from `POST …/events/tickets/`) may authenticate the request in
     * place of an Authorization header (a browser's EventSource sends none).
     */
    streamTickets?: boolean;
    /** Tenant routes only, required there: the capability the caller's role needs, or `member`. */
    access?: TenantAccess;
  }
}
