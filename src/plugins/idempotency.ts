// Idempotency-Key on the creating POSTs (route config `idempotent: true`): a retried request gets the first answer, never a second record.
import { createHash } from 'node:crypto';
import fp from 'fastify-plugin';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest, onSendAsyncHookHandler, preHandlerAsyncHookHandler } from 'fastify';
import { ProblemError, conflict } from '../lib/problem.js';
import { responses } from '../lib/http-schemas.js';

const HEADER = 'idempotency-key';
/** How long a key's answer is kept; an expired key is free again. */
const KEEP_HOURS = 24;
/** A first request still unanswered after this long was lost with its process: the key may be claimed again. */
const ABANDONED_MINUTES = 5;

const KEY_DESCRIPTION =
  'Makes the request safe to retry: 1–255 visible ASCII characters, chosen by the client (e.g. a UUID), scoped to ' +
  'the signed-in user (or the workspace API key) and kept 24 hours. A retry with the same key and the same request (path and body) gets the ' +
  'first answer again, with `Idempotent-Replayed: true`, and creates nothing. The same key with another request ' +
  'answers 422; a retry while the first request is still being handled answers 409. Only successful answers are ' +
  'kept: after a 4xx or 5xx the key is free and the retry runs again.';

const reused = () =>
  new ProblemError({
    status: 422,
    code: 'idempotency_key_reused',
    title: 'Unprocessable content',
    detail: 'This Idempotency-Key was used for a different request. Use a new key for a new request.',
  });

/**
 * Where a caller's keys live: a user's in `idempotency_keys`, a workspace API key's in `api_key_idempotency_keys` (a
 * key is no user). Table and column names are these constants, never request input.
 */
const KEY_SPACES = {
  user: { table: 'idempotency_keys', owner: 'user_id' },
  apiKey: { table: 'api_key_idempotency_keys', owner: 'api_key_id' },
} as const;
type KeySpace = (typeof KEY_SPACES)[keyof typeof KEY_SPACES];

interface Claim {
  space: KeySpace;
  ownerId: string;
  key: string;
}

/** The key space and owner of an authenticated caller, if any. */
function callerOf(request: FastifyRequest): { space: KeySpace; ownerId: string } | undefined {
  if (request.currentUser) return { space: KEY_SPACES.user, ownerId: request.currentUser.id };
  if (request.apiKey) return { space: KEY_SPACES.apiKey, ownerId: request.apiKey.id };
  return undefined;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route creates something: it honours the Idempotency-Key header. */
    idempotent?: boolean;
  }
  interface FastifyRequest {
    idempotencyClaim?: Claim;
  }
}

export default fp(
  async (app) => {
    const pool = app.pg;

    /** Runs after the route's own preHandlers, so the caller is authenticated and the tenant resolved. */
    const claim: preHandlerAsyncHookHandler = async (request: FastifyRequest, reply: FastifyReply) => {
      const key = request.headers[HEADER];
      const caller = callerOf(request);
      if (typeof key !== 'string' || !caller) return;
      const { table, owner } = caller.space;
      const requestHash = createHash('sha256')
        .update(JSON.stringify([request.method, request.routeOptions.url, request.params, request.body ?? null]))
        .digest('hex');
      // An expired or abandoned entry of this key is gone before the claim; others are purged now and then.
      await pool.query(
        `DELETE FROM ${table} WHERE ${owner} = $1 AND key = $2
           AND (created_at < now() - make_interval(hours => $3)
                OR (response_status IS NULL AND created_at < now() - make_interval(mins => $4)))`,
        [caller.ownerId, key, KEEP_HOURS, ABANDONED_MINUTES],
      );
      if (Math.random() < 0.01)
        await pool.query(`DELETE FROM ${table} WHERE created_at < now() - make_interval(hours => $1)`, [KEEP_HOURS]);
      const inserted = await pool.query(`INSERT INTO ${table} (${owner}, key, request_hash) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [
        caller.ownerId,
        key,
        requestHash,
      ]);
      if (inserted.rowCount === 1) {
        request.idempotencyClaim = { ...caller, key };
        return;
      }
      const { rows } = await pool.query<{
        request_hash: string;
        response_status: number | null;
        response_content_type: string | null;
        response_body: string | null;
      }>(`SELECT request_hash, response_status, response_content_type, response_body FROM ${table} WHERE ${owner} = $1 AND key = $2`, [
        caller.ownerId,
        key,
      ]);
      const first = rows[0];
      // Gone between the two statements (its first request failed): the client retries and claims it then.
      if (!first || first.response_status === null) {
        throw conflict('idempotency_request_in_progress', 'A request with this Idempotency-Key is still being handled. Retry shortly.');
      }
      if (first.request_hash !== requestHash) throw reused();
      reply.header('idempotent-replayed', 'true');
      if (first.response_content_type) reply.type(first.response_content_type);
      return reply.code(first.response_status).send(first.response_body ?? undefined);
    };

    /** Keeps a successful answer for the key; a failed one frees the key so that the retry runs again. */
    const record: onSendAsyncHookHandler<unknown> = async (request, reply, payload) => {
      const claimed = request.idempotencyClaim;
      if (!claimed) return payload;
      request.idempotencyClaim = undefined;
      const { table, owner } = claimed.space;
      if (reply.statusCode >= 200 && reply.statusCode < 300 && (typeof payload === 'string' || payload === null || payload === undefined)) {
        await pool.query(
          `UPDATE ${table} SET response_status = $3, response_content_type = $4, response_body = $5
           WHERE ${owner} = $1 AND key = $2`,
          [claimed.ownerId, claimed.key, reply.statusCode, String(reply.getHeader('content-type') ?? '') || null, payload ?? null],
        );
      } else {
        await pool.query(`DELETE FROM ${table} WHERE ${owner} = $1 AND key = $2`, [claimed.ownerId, claimed.key]);
      }
      return payload;
    };

    app.addHook('onRoute', (route) => {
      if (!route.config?.idempotent) return;
      const asList = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);
      route.preHandler = [...asList(route.preHandler), claim] as typeof route.preHandler;
      route.onSend = [...asList(route.onSend), record] as typeof route.onSend;
      // Declared in the document where it applies, with the two answers it adds.
      route.schema ??= {};
      const schema = route.schema as { headers?: unknown; response?: Record<number, unknown> };
      schema.headers = Type.Object({
        [HEADER]: Type.Optional(Type.String({ minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]+$', description: KEY_DESCRIPTION })),
      });
      schema.response = { ...responses({}, 409, 422), ...schema.response };
    });
  },
  { name: 'idempotency', dependencies: ['db'] },
);
