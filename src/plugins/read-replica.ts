// The optional read replica (DATABASE_REPLICA_URL): handles for GET reads, and the write positions that keep them honest.
import fp from 'fastify-plugin';
import type pg from 'pg';
import { Redis } from 'ioredis';
import { type Db, openDatabase } from '../db/client.js';
import { failoverClient, failoverReader, memoryWritePositions, ReplicaRouter, redisWritePositions } from '../db/read-routing.js';

export interface ReadHandles {
  db: Db;
  pool: pg.Pool;
}

const READS = new Set(['GET', 'HEAD']);

export default fp(
  async (app) => {
    const url = app.config.databaseReplicaUrl;
    if (!url) {
      app.decorate('readHandles', async () => null);
      return;
    }
    const replica = openDatabase(
      url,
      app.config.databasePoolSize,
      (error) => app.log.warn({ err: error }, 'idle replica connection failed'),
      {
        pooler: false,
      },
    );
    // Write positions shared by every process and instance when Redis is there; else each process keeps its own.
    const redis = app.config.redisUrl
      ? new Redis(app.config.redisUrl, { connectTimeout: 1000, commandTimeout: 1000, maxRetriesPerRequest: 1 })
      : null;
    redis?.on('error', (error: Error) => app.log.warn({ err: { message: error.message } }, 'read replica: Redis unreachable'));
    const router = new ReplicaRouter(app.pg, replica.pool, redis ? redisWritePositions(redis) : memoryWritePositions(), (healthy, reason) =>
      app.log[healthy ? 'info' : 'warn']({ reason }, healthy ? 'read replica in use' : 'read replica skipped'),
    );
    const handles: ReadHandles = {
      db: failoverClient(replica.db, app.serving.db, router),
      pool: failoverReader(replica.pool, app.serving.pool, router),
    };
    app.decorate('readHandles', async (userId: string) => ((await router.usableFor(userId)) ? handles : null));
    // Before the answer to a write leaves: the user's next read, on any instance, must see it.
    app.addHook('onSend', async (request, reply, payload) => {
      if (!READS.has(request.method) && reply.statusCode < 400 && request.currentUser) {
        await router.noteWrite(request.currentUser.id).catch((error: Error) => {
          app.log.warn({ err: error }, 'read replica: could not record a write position');
          router.markDown('write position not recorded');
        });
      }
      return payload;
    });
    app.addHook('onReady', async () => router.start());
    app.addHook('onClose', async () => {
      router.stop();
      await redis?.quit().catch(() => redis.disconnect());
      await replica.close();
    });
  },
  { name: 'read-replica', dependencies: ['db'] },
);

declare module 'fastify' {
  interface FastifyInstance {
    /** Handles on the replica for a GET of this user, or null: no replica, unhealthy, or the user's write not replayed. */
    readHandles: (userId: string) => Promise<ReadHandles | null>;
  }
}
