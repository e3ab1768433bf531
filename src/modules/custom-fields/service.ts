// The custom field definitions of a workspace: create, change (key and type never), archive and restore (values are
// kept in the records' maps throughout), with the limits of the contract. Definitions are rows of their own table, so
// no change here takes a lock that stops writes to a records table (an index job builds CONCURRENTLY).
import { Prisma, type CustomFieldDefinition } from '../../generated/prisma/client.js';
import type { TenantDb, TenantTx } from '../../db/tenant-scope.js';
import { lockCustomFields } from '../../db/organization-lock.js';
import { enqueueJob, JOBS } from '../../jobs/queue.js';
import { isUuid } from '../../lib/http-schemas.js';
import { conflict, notFound, validationFailed, type FieldErrors } from '../../lib/problem.js';
import {
  CUSTOM_OBJECT_TABLES,
  MAX_ACTIVE_FIELDS,
  ORDERED_TYPES,
  SELECT_TYPES,
  type CustomFieldOption,
  type CustomFieldType,
  type CustomObject,
} from '../../records/custom-fields/definitions.js';
import type { CustomFieldCreate, CustomFieldDto, CustomFieldListQuery, CustomFieldUpdate } from './schemas.js';

const fieldNotFound = () => notFound('Custom field not found.', 'custom_field_not_found');

/** Prisma's unique violation: the (organization, object, key) index. */
const UNIQUE_VIOLATION = 'P2002';

const toDto = (row: CustomFieldDefinition): CustomFieldDto => ({
  id: row.id,
  object: row.object as CustomObject,
  key: row.key,
  label: row.label,
  type: row.type as CustomFieldType,
  required: row.required,
  options: (Array.isArray(row.options) ? row.options : []) as unknown as CustomFieldOption[],
  position: row.position,
  description: row.description,
  archived_at: row.archivedAt?.toISOString() ?? null,
  created_at: row.createdAt.toISOString(),
  updated_at: row.updatedAt.toISOString(),
});

/** Options fit the type: a select type needs one or more with unique values; the others none. */
function checkOptions(type: CustomFieldType, options: CustomFieldOption[] | undefined, errors: FieldErrors): void {
  if (!SELECT_TYPES.has(type)) {
    if (options !== undefined && options.length > 0) errors.options = ['Only select and multi_select fields take options.'];
    return;
  }
  if (options === undefined || options.length === 0) errors.options = ['A select field needs at least one option.'];
  else if (new Set(options.map((option) => option.value)).size !== options.length) errors.options = ['Option values must be unique.'];
}

/**
 * Queues the job that builds or drops the field's range-and-sort index (index-job.ts), in the transaction that changes
 * the field: the job exists exactly when the change does. Only ordered types have one.
 */
async function queueIndexSync(tx: TenantTx, field: Pick<CustomFieldDefinition, 'id' | 'type'>): Promise<void> {
  if (ORDERED_TYPES.has(field.type as CustomFieldType)) await enqueueJob(tx, JOBS.customFieldIndex, field.id);
}

async function find(db: TenantDb, id: string): Promise<CustomFieldDefinition> {
  const row = isUuid(id) ? await db.customFieldDefinition.findFirst({ where: { id } }) : null;
  if (!row) throw fieldNotFound();
  return row;
}

/**
 * 400 when the record type already has the maximum of active fields. Called in a transaction that holds the record
 * type's lock (lockCustomFields), so that the count stays true until the transaction's own field is written.
 */
async function checkRoom(db: TenantTx, object: string): Promise<void> {
  const active = await db.customFieldDefinition.count({ where: { object, archivedAt: null } });
  if (active >= MAX_ACTIVE_FIELDS) {
    throw validationFailed({ object: [`A record type has at most ${MAX_ACTIVE_FIELDS} active custom fields: archive one first.`] });
  }
}

/** How many records (archived ones too) hold one of `values` in the select field `field`. */
async function holding(db: TenantDb, field: CustomFieldDefinition, values: string[]): Promise<number> {
  const table = Prisma.raw(CUSTOM_OBJECT_TABLES[field.object as CustomObject]);
  const held =
    field.type === 'multi_select'
      ? Prisma.sql`jsonb_exists_any(custom_fields -> ${field.key}, ${values}::text[])`
      : Prisma.sql`(custom_fields ->> ${field.key}) = ANY(${values}::text[])`;
  const [row] = await db.$queryRaw<{ count: number }[]>`
    SELECT count(*)::int AS count FROM ${table} WHERE organization_id = ${field.organizationId}::uuid AND ${held}`;
  return row?.count ?? 0;
}

export const customFieldService = {
  /** The workspace's fields (active by default), by record type and position. */
  async list(db: TenantDb, query: CustomFieldListQuery): Promise<CustomFieldDto[]> {
    const archived = query.archived ?? 'active';
    const rows = await db.customFieldDefinition.findMany({
      where: {
        ...(query.object ? { object: query.object } : {}),
        ...(archived === 'active' ? { archivedAt: null } : archived === 'archived' ? { archivedAt: { not: null } } : {}),
      },
      orderBy: [{ object: 'asc' }, { position: 'asc' }, { createdAt: 'asc' }],
    });
    return rows.map(toDto);
  },

  get: async (db: TenantDb, id: string) => toDto(await find(db, id)),

  async create(db: TenantDb, organizationId: string, body: CustomFieldCreate): Promise<CustomFieldDto> {
    const errors: FieldErrors = {};
    checkOptions(body.type, body.options, errors);
    if (Object.keys(errors).length > 0) throw validationFailed(errors);
    try {
      const row = await db.$transaction(async (tx) => {
        // Serialised per workspace and record type: the limit's count and the next position hold until the insert.
        await lockCustomFields(tx, organizationId, body.object);
        await checkRoom(tx, body.object);
        const last = await tx.customFieldDefinition.aggregate({ where: { object: body.object }, _max: { position: true } });
        const field = await tx.customFieldDefinition.create({
          data: {
            organizationId,
            object: body.object,
            key: body.key,
            label: body.label,
            type: body.type,
            required: body.required ?? false,
            options: (body.options ?? []) as Prisma.InputJsonArray,
            position: body.position ?? (last._max.position ?? -1) + 1,
            description: body.description ?? null,
          },
        });
        await queueIndexSync(tx, field);
        return field;
      });
      return toDto(row);
    } catch (error) {
      if ((error as { code?: unknown }).code === UNIQUE_VIOLATION) {
        throw validationFailed({ key: ['Another custom field of this record type has this key (archived ones keep theirs).'] });
      }
      throw error;
    }
  },

  /** Label, required, options, position, description; `key`, `type` and `object` never (400). */
  async update(db: TenantDb, id: string, body: CustomFieldUpdate): Promise<CustomFieldDto> {
    const current = await find(db, id);
    const errors: FieldErrors = {};
    for (const name of ['key', 'type', 'object'] as const) {
      if (name in body) errors[name] = [`A custom field's ${name} cannot change: create another field.`];
    }
    if (body.options !== undefined) checkOptions(current.type as CustomFieldType, body.options, errors);
    if (Object.keys(errors).length > 0) throw validationFailed(errors);
    if (body.options !== undefined) {
      const kept = new Set(body.options.map((option) => option.value));
      const removed = ((current.options ?? []) as unknown as CustomFieldOption[])
        .map((option) => option.value)
        .filter((value) => !kept.has(value));
      const count = removed.length > 0 ? await holding(db, current, removed) : 0;
      if (count > 0) {
        throw conflict(
          'option_in_use',
          `${count} record${count === 1 ? '' : 's'} hold${count === 1 ? 's' : ''} ${removed.map((value) => `"${value}"`).join(', ')}: ` +
            'change or clear those values before removing the option.',
        );
      }
    }
    const row = await db.customFieldDefinition.update({
      where: { id: current.id },
      data: {
        label: body.label,
        required: body.required,
        options: body.options as Prisma.InputJsonArray | undefined,
        position: body.position,
        description: body.description,
      },
    });
    return toDto(row);
  },

  /** Archives the field: it leaves records' answers, queries and documents; its values stay stored, its index goes. */
  async archive(db: TenantDb, id: string): Promise<void> {
    const current = await find(db, id);
    if (current.archivedAt !== null) return;
    await db.$transaction(async (tx) => {
      await tx.customFieldDefinition.update({ where: { id: current.id }, data: { archivedAt: new Date() } });
      await queueIndexSync(tx, current);
    });
  },

  /** Brings an archived field back with the values records kept; 400 when its record type is full. */
  async restore(db: TenantDb, id: string): Promise<CustomFieldDto> {
    const current = await find(db, id);
    if (current.archivedAt === null) return toDto(current);
    return db.$transaction(async (tx) => {
      await lockCustomFields(tx, current.organizationId, current.object);
      await checkRoom(tx, current.object);
      const restored = await tx.customFieldDefinition.update({ where: { id: current.id }, data: { archivedAt: null } });
      await queueIndexSync(tx, restored);
      return toDto(restored);
    });
  },
};

export type CustomFieldService = typeof customFieldService;
