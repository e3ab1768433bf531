// The sign-in page.
import { html } from '../html.js';
import { layout } from './layout.js';

export function loginPage(error: string | null, next: string, username: string): string {
  return layout(
    { title: 'Sign in' },
    html`${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<form method="post" action="/admin/login/">
<input type="hidden" name="next" value="${next}">
<p><label for="username">Username</label> <input id="username" name="username" autocomplete="username" required value="${username}"></p>
<p><label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password" required></p>
<p><button type="submit">Sign in</button></p>
</form>`,
  );
}
