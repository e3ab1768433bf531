// Workspace API keys: creation (the secret shown once, only its SHA-256 kept), listing and revocation, each audited.
import { randomBytes } from 'node:crypto';
import type { ApiKey } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import { isUuid } from '../../lib/http-schemas.js';
import { badRequest, notFound } from '../../lib/problem.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';
import { API_KEY_PREFIX, hashApiKey } from '../../lib/api-key-format.js';
import type { ApiKeyCapability, ApiKeyCreate, ApiKeyCreatedDto, ApiKeyDto } from './schemas.js';

/** Characters of the key kept for display: the prefix and 8 random characters (48 bits, not enough to guess the rest). */
const DISPLAY_LENGTH = API_KEY_PREFIX.length + 8;

const apiKeyNotFound = () => notFound('API key not found.');

export function toApiKeyDto(row: ApiKey): ApiKeyDto {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    capabilities: row.capabilities as ApiKeyCapability[],
    created_by: row.createdById,
    created_at: row.createdAt.toISOString(),
    last_used_at: row.lastUsedAt?.toISOString() ?? null,
    expires_at: row.expiresAt?.toISOString() ?? null,
  };
}

/** A key as the console lists it: the API's fields, the creator's username, and the revocation (the API lists live keys only). */
export type ConsoleApiKey = ApiKeyDto & { created_by_username: string | null; revoked_at: string | null };

export function createApiKeyService() {
  return {
    async create(tenant: Tenant, input: ApiKeyCreate, audit: AuditContext): Promise<ApiKeyCreatedDto> {
      const expiresAt = input.expires_at === undefined ? null : new Date(input.expires_at);
      if (expiresAt && !(expiresAt.getTime() > Date.now())) {
        throw badRequest('validation_failed', 'expires_at must be in the future.', { expires_at: ['Must be a future instant.'] });
      }
      // 256 random bits: the key cannot be guessed, so a fast unsalted hash is enough to store it.
      const key = API_KEY_PREFIX + randomBytes(32).toString('base64url');
      const createdById = audit.actor.type === 'user' ? audit.actor.userId : null;
      const row = await tenant.db.$transaction(async (tx) => {
        const created = await tx.apiKey.create({
          data: {
            organizationId: tenant.organization.id,
            name: input.name,
            prefix: key.slice(0, DISPLAY_LENGTH),
            keyHash: new Uint8Array(hashApiKey(key)),
            capabilities: input.capabilities,
            createdById,
            expiresAt,
          },
        });
        await recordAudit(tx, {
          ...audit,
          action: 'api_key.created',
          target: { type: 'api_key', id: created.id },
          organizationId: tenant.organization.id,
        });
        return created;
      });
      return { ...toApiKeyDto(row), key };
    },

    async list(tenant: Tenant): Promise<ApiKeyDto[]> {
      const rows = await tenant.db.apiKey.findMany({ where: { revokedAt: null }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] });
      return rows.map(toApiKeyDto);
    },

    /** Revokes at once: the next request with the key is refused (every request looks the key up). */
    async revoke(tenant: Tenant, keyId: string, audit: AuditContext): Promise<void> {
      if (!isUuid(keyId)) throw apiKeyNotFound();
      await tenant.db.$transaction(async (tx) => {
        const { count } = await tx.apiKey.updateMany({ where: { id: keyId, revokedAt: null }, data: { revokedAt: new Date() } });
        if (count === 0) throw apiKeyNotFound();
        await recordAudit(tx, {
          ...audit,
          action: 'api_key.revoked',
          target: { type: 'api_key', id: keyId },
          organizationId: tenant.organization.id,
        });
      });
    },

    /**
     * Every key of a workspace for the console, revoked ones included (with when), newest first, with the creator's
     * current username (never a secret: only the stored prefix exists).
     */
    async listForConsole(db: Db, organizationId: string): Promise<ConsoleApiKey[]> {
      const rows = await db.apiKey.findMany({
        where: { organizationId },
        include: { createdBy: { select: { username: true } } },
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      });
      return rows.map((row) => ({
        ...toApiKeyDto(row),
        created_by_username: row.createdBy?.username ?? null,
        revoked_at: row.revokedAt?.toISOString() ?? null,
      }));
    },
  };
}
export type ApiKeyService = ReturnType<typeof createApiKeyService>;
