// The shape of a workspace API key, shared by the key service and the authentication hooks: its prefix and stored hash.
import { createHash } from 'node:crypto';

/** Every key starts with this, so secret scanners (and people) recognise a leaked one. */
export const API_KEY_PREFIX = 'crm_live_';

/** The stored form of a key: lookups hash the presented key and compare hashes, never keys. */
export const hashApiKey = (key: string): Buffer => createHash('sha256').update(key, 'utf8').digest();

/** Whether a Bearer credential is an API key (rather than an access token): keys carry their prefix. */
export const looksLikeApiKey = (credential: string): boolean => credential.startsWith(API_KEY_PREFIX);
