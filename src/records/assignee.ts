// The `assigned_to_name` of a CRM record: the assignee's display name, else their username, read with the record.
import type { Prisma } from '../generated/prisma/client.js';

/** The SQL expression of a row of `table` (its page reads and writes select it by this name). */
export const assigneeNameSql = (table: string) => ({
  assigned_to_name:
    `(SELECT coalesce(p.display_name, u.username) FROM users u LEFT JOIN profiles p ON p.user_id = u.id ` +
    `WHERE u.id = ${table}.assigned_to)`,
});

/** The same through Prisma (a record's GET): select this as `assignee`. */
export const assigneeSelect = {
  select: { username: true, profile: { select: { displayName: true } } },
} satisfies Prisma.UserDefaultArgs;

type Assignee = Prisma.UserGetPayload<typeof assigneeSelect> | null;

export const assigneeName = (assignee: Assignee): string | null => (assignee ? (assignee.profile?.displayName ?? assignee.username) : null);
