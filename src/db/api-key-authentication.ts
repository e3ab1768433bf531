// Authenticates a workspace API key: one indexed lookup by the key's SHA-256 on the primary, so revocation and expiry hold at once.
import type { Organization } from '../generated/prisma/client.js';
import type { Capability } from '../lib/capabilities.js';
import { unauthorized } from '../lib/problem.js';
import type { Queryable } from './client.js';

export interface ApiKeyIdentity {
  id: string;
  name: string;
  /** The key's display prefix (never the secret), for the audit log. */
  prefix: string;
  capabilities: Capability[];
  organization: Organization;
}

type KeyRow = Organization & { keyId: string; keyName: string; keyPrefix: string; capabilities: Capability[]; stale: boolean };

/** A key that is unknown, revoked, expired or of a workspace that is no longer active is one answer: 401. */
export const invalidApiKey = () => unauthorized('api_key_not_valid', 'The API key is unknown, revoked or expired.');

export async function authenticateApiKey(pool: Queryable, keyHash: Buffer): Promise<ApiKeyIdentity> {
  const { rows } = await pool.query<KeyRow>({
    name: 'authenticate-api-key',
    text: `SELECT k.id AS "keyId", k.name AS "keyName", k.prefix AS "keyPrefix", k.capabilities,
             k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute' AS stale,
             o.id, o.name, o.slug, o.is_personal AS "isPersonal", o.personal_user_id AS "personalUserId", o.status,
             o.created_by_id AS "createdById", o.owner_email AS "ownerEmail", o.require_two_factor AS "requireTwoFactor",
             o.created_at AS "createdAt", o.updated_at AS "updatedAt"
           FROM api_keys k JOIN organizations o ON o.id = k.organization_id AND o.status = 'active'
           WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`,
    values: [keyHash],
  });
  const row = rows[0];
  if (!row) throw invalidApiKey();
  // last_used_at is for people deciding which keys to revoke: minute precision spares a write per request.
  if (row.stale)
    await pool.query({ name: 'touch-api-key', text: 'UPDATE api_keys SET last_used_at = now() WHERE id = $1', values: [row.keyId] });
  const { keyId, keyName, keyPrefix, capabilities, stale: _stale, ...organization } = row;
  return { id: keyId, name: keyName, prefix: keyPrefix, capabilities, organization };
}
