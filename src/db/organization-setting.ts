// Sends the workspace the row-level security policies admit (app.organization_id) with each tenant statement, in its round trip.
import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';

/** The transaction-local setting every workspace table's policy compares its organization_id with. */
export const ORGANIZATION_SETTING = 'app.organization_id';

/**
 * Sets the workspace for the rest of the transaction and returns no row (set_config returns the value, never NULL),
 * so that it adds no result to the statement it precedes.
 */
const SET_ORGANIZATION = `SELECT WHERE set_config('${ORGANIZATION_SETTING}', $1, true) IS NULL`;

/** A statement's planner settings (`enable_indexscan: 'off'`), sent in its preface: they hold for that statement alone. */
export type PlanSettings = Readonly<Record<string, string>>;
/** Where a statement (a QueryConfig) carries its PlanSettings. */
const PLAN_SETTINGS = Symbol('plan settings');

/**
 * `query` planned under `settings`, local to its own implicit transaction: the settings go in the workspace preface,
 * so a statement that needs its own plan takes one round trip, not a transaction of four (BEGIN, SET, it, COMMIT).
 */
export function withPlanSettings(query: pg.QueryConfig, settings: PlanSettings): pg.QueryConfig {
  return Object.assign({ ...query }, { [PLAN_SETTINGS]: settings });
}

/** The preface setting the workspace and `settings`: concat evaluates every set_config and is never NULL (no row). */
function prefaceOf(settings: PlanSettings | undefined): string {
  if (settings === undefined) return SET_ORGANIZATION;
  const more = Object.entries(settings).map(([name, value]) => `set_config(${pg.escapeLiteral(name)}, ${pg.escapeLiteral(value)}, true)`);
  return `SELECT WHERE concat(set_config('${ORGANIZATION_SETTING}', $1, true), ${more.join(', ')}) IS NULL`;
}

/** The statement that sets the workspace for the rest of a transaction, for a caller that cannot send it as a preface. */
export const setOrganizationStatement = (organizationId: string) =>
  `SELECT set_config('${ORGANIZATION_SETTING}', ${pg.escapeLiteral(organizationId)}, true)`;

/**
 * The name the preface is prepared under on a connection that keeps named statements: parsed and planned once per
 * connection instead of with every statement. A connection through a transaction-mode pooler is marked
 * UNNAMED_STATEMENTS (db/client.ts) and parses it each time, as every statement it sends.
 */
const PREFACE_NAME = 'crm_set_organization';
/** The names of prefaces with plan settings, one per distinct text (a few, all written in code). */
const prefaceNames = new Map<string, string>([[SET_ORGANIZATION, PREFACE_NAME]]);
const prefaceName = (text: string): string => {
  const known = prefaceNames.get(text);
  if (known !== undefined) return known;
  const name = `${PREFACE_NAME}_${prefaceNames.size}`;
  prefaceNames.set(text, name);
  return name;
};
/** Marks a connection (node-postgres' protocol connection) whose statements must all be unnamed. */
export const UNNAMED_STATEMENTS = Symbol('unnamed statements only');

/** Statements that open or end a transaction: a setting sent before them would die with the implicit one. */
const TRANSACTION_CONTROL = /^\s*(BEGIN|START|COMMIT|END|ROLLBACK|ABORT|SAVEPOINT|RELEASE|PREPARE|SET\s+TRANSACTION)\b/i;
/** Opens a transaction block: the setting sent with its first statement then holds until the block ends. */
const BLOCK_START = /^\s*(BEGIN|START\s+TRANSACTION)\b/i;
/** Undoes what ran since a savepoint, a setting sent since then included. */
const ROLLBACK_TO = /^\s*ROLLBACK\s+((WORK|TRANSACTION)\s+)?TO\b/i;
/** Ends a transaction block. */
const BLOCK_END = /^\s*(COMMIT|END|ROLLBACK|ABORT|PREPARE\s+TRANSACTION)\b/i;

/** What node-postgres' Query does internally and its type declarations leave out. */
interface QueryInternals {
  queryMode?: string;
  prepare(connection: unknown): void;
  handleCommandComplete(message: unknown, connection: unknown): void;
}
interface ProtocolConnection {
  parsedStatements: Record<string, string>;
  [UNNAMED_STATEMENTS]?: boolean;
  parse(message: { text: string; name: string; types: unknown[] }): void;
  bind(message: { portal: string; statement: string; values: unknown[] }): void;
  execute(message: { portal: string; rows: number }): void;
}

/**
 * A statement preceded by SET_ORGANIZATION in the same extended-protocol exchange: both are sent before one Sync, so
 * PostgreSQL runs them in one transaction (the implicit one, or the open transaction block) and the setting, local
 * to that transaction, holds for the statement and ends with it. No extra round trip, and a transaction-mode pooler
 * keeps the exchange on one server connection. The preface's only answer (its CommandComplete) is dropped.
 */
class OrganizationQuery extends pg.Query {
  private prefaceDone = false;
  callback?: (error: Error | null, result: unknown) => void;

  private readonly preface: string;

  constructor(
    private readonly organizationId: string,
    config: pg.QueryConfig,
  ) {
    super(config);
    this.preface = prefaceOf((config as { [PLAN_SETTINGS]?: PlanSettings })[PLAN_SETTINGS]);
    (this as unknown as QueryInternals).queryMode = 'extended';
  }

  prepare(connection: ProtocolConnection): void {
    const text = this.preface;
    const name = connection[UNNAMED_STATEMENTS] ? '' : prefaceName(text);
    if (name === '' || connection.parsedStatements[name] !== text) {
      connection.parse({ text, name, types: [] });
      if (name !== '') connection.parsedStatements[name] = text;
    }
    connection.bind({ portal: '', statement: name, values: [this.organizationId] });
    connection.execute({ portal: '', rows: 0 });
    (pg.Query.prototype as unknown as QueryInternals).prepare.call(this, connection);
  }

  handleCommandComplete(message: unknown, connection: unknown): void {
    if (!this.prefaceDone) {
      this.prefaceDone = true;
      return;
    }
    (pg.Query.prototype as unknown as QueryInternals).handleCommandComplete.call(this, message, connection);
  }
}

type QueryFunction = (...args: unknown[]) => Promise<unknown>;

/** The text of a query call's arguments when it is a plain text statement (no stream, no callback), else undefined. */
function statementOf(args: unknown[]): pg.QueryConfig | undefined {
  const [config, values] = args;
  if (args.length > 2 || typeof values === 'function') return undefined;
  if (typeof config === 'string') return { text: config, values: values as unknown[] | undefined };
  if (config !== null && typeof config === 'object' && !('submit' in config) && typeof (config as { text?: unknown }).text === 'string') {
    return { ...(config as pg.QueryConfig), ...(values === undefined ? {} : { values: values as unknown[] }) };
  }
  return undefined;
}

/**
 * Where a checked-out client stands: inside a transaction block, the workspace already set in it (if any). Once set,
 * the setting holds until the block ends, so the block's later statements go without the preface: a create's
 * transaction of ten statements pays for one. A pool's queries are each their own implicit transaction: always prefaced.
 */
interface BlockState {
  inBlock: boolean;
  setFor: string | undefined;
}

/**
 * The arguments to send for `args` (a query call's) under `organizationId`: prefaced when it is a text statement
 * outside transaction control and the block (if any) has not got this workspace yet; anything else (a COPY stream,
 * BEGIN) as it was. A statement sent without the setting reads and writes no workspace row, so what is not prefaced
 * fails closed.
 */
function prefaced(organizationId: string | undefined, args: unknown[], block: BlockState | undefined): unknown[] {
  const query = statementOf(args);
  if (query === undefined) return args;
  if (TRANSACTION_CONTROL.test(query.text)) {
    if (block !== undefined) {
      if (BLOCK_START.test(query.text)) Object.assign(block, { inBlock: true, setFor: undefined });
      else if (ROLLBACK_TO.test(query.text)) block.setFor = undefined;
      else if (BLOCK_END.test(query.text)) Object.assign(block, { inBlock: false, setFor: undefined });
    }
    return args;
  }
  const planned = (query as { [PLAN_SETTINGS]?: PlanSettings })[PLAN_SETTINGS] !== undefined;
  // Plan settings ride on the preface of a statement that is its own transaction; in a block they would outlive it.
  if (planned && (organizationId === undefined || block?.inBlock))
    throw new Error('plan settings need a workspace statement outside a transaction block');
  if (organizationId === undefined) return args;
  if (block?.inBlock && !planned) {
    if (block.setFor === organizationId) return args;
    block.setFor = organizationId;
  }
  return [new OrganizationQuery(organizationId, query)];
}

/** Where `withConnectionNoted` keeps the first client checked out in its context. */
const connectionHolder = new AsyncLocalStorage<{ client?: pg.PoolClient }>();

/**
 * Runs `work`, giving it the first client a pool of this module hands out within it: the connection of a Prisma
 * transaction `work` opens, on which statements can then be sent without Prisma (same connection, same transaction).
 */
export function withConnectionNoted<T>(work: (connection: () => pg.PoolClient | undefined) => Promise<T>): Promise<T> {
  const holder: { client?: pg.PoolClient } = {};
  return connectionHolder.run(holder, () => work(() => holder.client));
}

/** `target` (a pool or a checked-out client) whose `query` prefaces statements with the workspace `organizationOf()` gives. */
function withPrefacedQueries<T extends object>(target: T, organizationOf: () => string | undefined): T {
  const query = (target as unknown as { query: QueryFunction }).query.bind(target);
  const pooled = target instanceof pg.Pool;
  const block: BlockState | undefined = pooled ? undefined : { inBlock: false, setFor: undefined };
  const send = (...args: unknown[]) => {
    const sent = prefaced(organizationOf(), args, block);
    const [organizationQuery] = sent;
    // A pool answers a query object with a promise (and releases its client in the callback it sets); a client
    // returns the object itself, whose callback is then ours to set.
    if (pooled || !(organizationQuery instanceof OrganizationQuery)) return query(...sent);
    return new Promise((resolve, reject) => {
      organizationQuery.callback = (error: Error | null, result: unknown) => (error ? reject(error) : resolve(result));
      query(organizationQuery);
    });
  };
  return new Proxy(target, {
    get(object, property) {
      if (property === 'query') return send;
      if (property === 'connect' && object instanceof pg.Pool) {
        return async () => {
          const client = withPrefacedQueries(await object.connect(), organizationOf);
          const holder = connectionHolder.getStore();
          if (holder && holder.client === undefined) holder.client = client;
          return client;
        };
      }
      const value = Reflect.get(object, property, object);
      return typeof value === 'function' ? value.bind(object) : value;
    },
  });
}

/**
 * The pool of one workspace's raw statements (page reads, writes): each carries that workspace's setting, on the pool
 * and on a client checked out of it. A transaction opened on such a client gets the setting with its first statement.
 */
export function organizationPool(pool: pg.Pool, organizationId: string): pg.Pool {
  return withPrefacedQueries(pool, () => organizationId);
}

const currentOrganization = new AsyncLocalStorage<string>();

/** Runs `work` with the workspace that statements of a `contextualPool` (the Prisma clients') carry. */
export function withOrganization<T>(organizationId: string, work: () => T): T {
  return currentOrganization.run(organizationId, work);
}

/**
 * The pool under a Prisma client: its statements carry the workspace of the `withOrganization` they run in (the
 * tenant-scoped client runs each operation in one), and none elsewhere.
 */
export function contextualPool(pool: pg.Pool): pg.Pool {
  return withPrefacedQueries(pool, () => currentOrganization.getStore());
}
