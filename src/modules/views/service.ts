// Saved views of a workspace: create, list, read, change and delete, each within what the caller may see (its own
// personal views and the workspace's) and do (MANAGE_CRM for workspace views); changes are audited.
import { Prisma, type SavedView } from '../../generated/prisma/client.js';
import type { Tenant } from '../../db/tenant.js';
import { recordAudit, type AuditAction, type AuditContext, type AuditWriter } from '../../audit/audit-log.js';
import { changedSince, nextVersion, versionMatches, type ExpectedVersions } from '../../lib/etag.js';
import { afterPosition, newestFirst, pageOfDtos, type Page, type PageRequest } from '../../lib/pagination.js';
import { badRequest, forbidden, validationFailed, type FieldErrors } from '../../lib/problem.js';
import { companyRecord } from '../companies/record.js';
import { contactRecord } from '../contacts/record.js';
import { dealRecord } from '../deals/record.js';
import { taskRecord } from '../tasks/record.js';
import {
  findVisibleView,
  viewNotFound,
  viewPartProblems,
  visibleTo,
  VIEW_OBJECTS,
  type ViewableRecord,
  type ViewObject,
} from '../../records/views.js';
import { MAX_VIEW_NAME, MAX_VIEWS_PER_WORKSPACE, type SavedViewDto } from './schemas.js';

/** The record type each view object lists. */
const RECORDS: Record<ViewObject, ViewableRecord> = {
  companies: companyRecord,
  contacts: contactRecord,
  deals: dealRecord,
  tasks: taskRecord,
};

const VISIBILITIES = ['personal', 'workspace'] as const;
type Visibility = (typeof VISIBILITIES)[number];
const CREATE_KEYS = new Set(['name', 'object', 'visibility', 'filter', 'search', 'sort', 'columns']);
const UPDATE_KEYS = new Set(['name', 'visibility', 'filter', 'search', 'sort', 'columns']);

/** Who asks: the signed-in user (null for a workspace API key, which sees and writes workspace views only). */
export interface Viewer {
  userId: string | null;
  audit: AuditContext;
}

export function toViewDto(view: SavedView): SavedViewDto {
  return {
    id: view.id,
    name: view.name,
    object: view.object as ViewObject,
    filter: (view.filter ?? null) as SavedViewDto['filter'],
    search: view.search,
    sort: view.sort as SavedViewDto['sort'],
    columns: view.columns as string[],
    visibility: view.visibility as Visibility,
    created_by: view.createdBy,
    created_at: view.createdAt.toISOString(),
    updated_at: view.updatedAt.toISOString(),
  };
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const asJson = (value: unknown) => value as Prisma.InputJsonValue;

/** The stored columns of a view's parts that a body gives (undefined parts keep their value). */
interface ViewValues {
  name?: string;
  object?: ViewObject;
  visibility?: Visibility;
  filter?: Prisma.InputJsonValue | typeof Prisma.DbNull;
  search?: string | null;
  sort?: Prisma.InputJsonValue;
  columns?: Prisma.InputJsonValue;
}

/**
 * Checks a create or update body for a view of `object` (known on update; read from the body on create): every
 * problem at its path (`name`, `filter.and.1.field`, `sort.0.field`, `columns.3`), all at once, as a query's.
 */
async function checkedValues(tenant: Tenant, body: unknown, object: ViewObject | undefined): Promise<ViewValues> {
  const errors: FieldErrors = {};
  const fail = (at: string, message: string) => {
    errors[at] = [...(errors[at] ?? []), message];
  };
  if (!isObject(body)) throw validationFailed({ body: ['Expected a JSON object.'] });
  const creating = object === undefined;
  for (const key of Object.keys(body)) {
    if (!(creating ? CREATE_KEYS : UPDATE_KEYS).has(key)) {
      fail(key, key === 'object' ? "A view's object cannot change: create another view." : 'Unknown field.');
    }
  }
  const values: ViewValues = {};
  if (body.name !== undefined || creating) {
    const name = typeof body.name === 'string' ? body.name.trim() : '';
    if (name === '' || name.length > MAX_VIEW_NAME) fail('name', `Expected 1 to ${MAX_VIEW_NAME} characters, not only spaces.`);
    values.name = name;
  }
  if (creating) {
    if (!(VIEW_OBJECTS as readonly unknown[]).includes(body.object)) fail('object', `Expected one of: ${VIEW_OBJECTS.join(', ')}.`);
    else values.object = body.object as ViewObject;
  }
  if (body.visibility !== undefined || creating) {
    if (!(VISIBILITIES as readonly unknown[]).includes(body.visibility)) fail('visibility', `Expected one of: ${VISIBILITIES.join(', ')}.`);
    else values.visibility = body.visibility as Visibility;
  }
  const type = values.object ?? object;
  const { filter, search, sort, columns } = body;
  if (sort === null) fail('sort', 'Expected an array (empty: newest first).');
  if (type)
    Object.assign(errors, await viewPartProblems(RECORDS[type], tenant.pages, { filter, search, sort: sort ?? undefined, columns }));
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
  // A null filter is SQL NULL (Prisma.DbNull), not a JSON null.
  if (filter !== undefined) values.filter = filter === null ? Prisma.DbNull : asJson(filter);
  if (search !== undefined) values.search = typeof search === 'string' && search !== '' ? search : null;
  if (sort !== undefined) values.sort = asJson(sort);
  if (columns !== undefined) values.columns = asJson(columns);
  return values;
}

const recordView = (tx: AuditWriter, tenant: Tenant, viewer: Viewer, action: AuditAction, id: string) =>
  recordAudit(tx, { ...viewer.audit, action, target: { type: 'view', id }, organizationId: tenant.organization.id });

/** 403 unless the caller may write a view of `visibility` (a workspace view: MANAGE_CRM). */
function mayWrite(tenant: Tenant, visibility: Visibility): void {
  if (visibility === 'workspace' && !tenant.can('MANAGE_CRM')) {
    throw forbidden('permission_denied', 'Creating, changing or deleting a workspace view needs MANAGE_CRM.');
  }
}

export async function createView(tenant: Tenant, viewer: Viewer, body: unknown): Promise<SavedViewDto> {
  const values = await checkedValues(tenant, body, undefined);
  const visibility = values.visibility as Visibility;
  mayWrite(tenant, visibility);
  if (visibility === 'personal' && viewer.userId === null) {
    throw validationFailed({ visibility: ['A workspace API key is no user: it creates workspace views only.'] });
  }
  const view = await tenant.db.$transaction(async (tx) => {
    // The limit holds under concurrent creates: they take turns on the workspace's views.
    await tx.$executeRaw`SELECT 1 FROM (SELECT pg_advisory_xact_lock(hashtextextended(${`saved_views:${tenant.organization.id}`}, 0))) AS locked`;
    if ((await tx.savedView.count()) >= MAX_VIEWS_PER_WORKSPACE) {
      throw badRequest('view_limit_reached', `A workspace keeps at most ${MAX_VIEWS_PER_WORKSPACE} saved views: delete one first.`);
    }
    const created = await tx.savedView.create({
      data: {
        ...(values as Omit<Prisma.SavedViewUncheckedCreateInput, 'organizationId'>),
        organizationId: tenant.organization.id,
        createdBy: viewer.userId,
      },
    });
    await recordView(tx, tenant, viewer, 'view.created', created.id);
    return created;
  });
  return toViewDto(view);
}

/** The views the caller sees (its personal ones and the workspace's), newest first, of one object when given. */
export async function listViews(tenant: Tenant, viewer: Viewer, page: PageRequest, object?: ViewObject): Promise<Page<SavedViewDto>> {
  const rows = await tenant.db.savedView.findMany({
    where: { AND: [visibleTo(viewer.userId), afterPosition(page.after), object ? { object } : {}] },
    orderBy: newestFirst,
    take: page.limit + 1,
  });
  return pageOfDtos(rows, page.limit, toViewDto);
}

async function visibleView(tenant: Tenant, viewer: Viewer, id: string): Promise<SavedView> {
  const view = await findVisibleView(tenant.db, id, viewer.userId);
  if (!view) throw viewNotFound();
  return view;
}

export const getView = async (tenant: Tenant, viewer: Viewer, id: string) => toViewDto(await visibleView(tenant, viewer, id));

/**
 * Changes the parts a PATCH gives. A workspace view (before or after) needs MANAGE_CRM; only its creator makes a
 * workspace view personal (it becomes the creator's). With `expected` (If-Match), only a view at one of those versions:
 * 412 otherwise, checked first and again by the write's condition.
 */
export async function updateView(
  tenant: Tenant,
  viewer: Viewer,
  id: string,
  body: unknown,
  expected: ExpectedVersions,
): Promise<SavedViewDto> {
  const view = await visibleView(tenant, viewer, id);
  if (!versionMatches(expected, view.updatedAt)) throw changedSince();
  const values = await checkedValues(tenant, body, view.object as ViewObject);
  mayWrite(tenant, view.visibility as Visibility);
  if (values.visibility) mayWrite(tenant, values.visibility);
  if (values.visibility === 'personal' && view.visibility === 'workspace' && (viewer.userId === null || view.createdBy !== viewer.userId)) {
    throw forbidden('permission_denied', 'Only its creator can make a workspace view personal.');
  }
  const updated = await tenant.db.$transaction(async (tx) => {
    const { count } = await tx.savedView.updateMany({
      where: Array.isArray(expected) ? { id: view.id, updatedAt: view.updatedAt } : { id: view.id },
      data: { ...values, updatedAt: nextVersion(view.updatedAt) },
    });
    if (count === 0) throw Array.isArray(expected) ? changedSince() : viewNotFound();
    await recordView(tx, tenant, viewer, 'view.updated', view.id);
    return tx.savedView.findUniqueOrThrow({ where: { id: view.id } });
  });
  return toViewDto(updated);
}

/** Deletes the view (a workspace view needs MANAGE_CRM); with `expected` (If-Match), only one at those versions. */
export async function deleteView(tenant: Tenant, viewer: Viewer, id: string, expected: ExpectedVersions): Promise<void> {
  const view = await visibleView(tenant, viewer, id);
  if (!versionMatches(expected, view.updatedAt)) throw changedSince();
  mayWrite(tenant, view.visibility as Visibility);
  await tenant.db.$transaction(async (tx) => {
    const where = Array.isArray(expected) ? { id: view.id, updatedAt: view.updatedAt } : { id: view.id };
    const { count } = await tx.savedView.deleteMany({ where });
    if (count === 0) throw Array.isArray(expected) ? changedSince() : viewNotFound();
    await recordView(tx, tenant, viewer, 'view.deleted', view.id);
  });
}
