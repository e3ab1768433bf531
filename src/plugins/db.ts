// The Prisma client (driver adapter over node-postgres) as `app.db`, disconnected when the app closes.
import fp from 'fastify-plugin';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.js';

export type Db = PrismaClient;

export function createDb(connectionString: string, poolSize = 10): Db {
  const adapter = new PrismaPg({ connectionString, max: poolSize });
  return new PrismaClient({ adapter });
}

export default fp(
  async (app) => {
    const url = app.config.databaseUrl;
    if (!url) throw new Error('databaseUrl is not set: start the embedded PostgreSQL or set DATABASE_URL first.');
    const db = createDb(url);
    app.decorate('db', db);
    app.addHook('onClose', async () => {
      await db.$disconnect();
    });
  },
  { name: 'db' },
);

declare module 'fastify' {
  interface FastifyInstance {
    db: Db;
  }
}
