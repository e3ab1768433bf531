// The console's numbered pages: fifty rows a page, read one row further to know whether a next page exists.
export const PAGE_SIZE = 50;

/** The Prisma `skip`/`take` of page `page` (from 1), one row more than a page. */
export const offsetOf = (page: number) => ({ skip: (page - 1) * PAGE_SIZE, take: PAGE_SIZE + 1 });

/** A page's rows and whether another follows, from the rows `offsetOf` read. */
export const offsetPage = <T>(rows: T[]) => ({ rows: rows.slice(0, PAGE_SIZE), hasNext: rows.length > PAGE_SIZE });
