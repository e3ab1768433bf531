// Signs the setup's installation administrator in to the admin console, as the console tests act through it.
import type { App } from '../../src/app.js';
import { ADMIN } from './fixtures.js';

export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** A console session of ADMIN: its cookie header, a page reader, and the CSRF token its forms carry. */
export async function consoleSession(app: App) {
  const login = await app.inject({
    method: 'POST',
    url: '/admin/login/',
    headers: FORM,
    payload: new URLSearchParams({ username: ADMIN.username, password: ADMIN.password }).toString(),
  });
  const cookie = `crm_admin_session=${login.cookies.find((c) => c.name === 'crm_admin_session')!.value}`;
  const get = (url: string) => app.inject({ method: 'GET', url, headers: { cookie } });
  const csrf = /name="_csrf" value="([^"]+)"/.exec((await get('/admin/')).body)![1]!;
  return { cookie, get, csrf };
}
