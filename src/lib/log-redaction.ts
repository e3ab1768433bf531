// Keeps secrets out of request logs: token segments of link URLs are masked before a URL is ever logged.

const TOKEN_PATHS: RegExp[] = [
  /^(\/api\/v1\/invitations\/)[^/?#]+/,
  /^(\/api\/v1\/installation-admin-invitations\/)[^/?#]+/,
  /^(\/api\/v1\/auth\/password-reset\/[^/?#]+\/)[^/?#]+/,
  /^(\/api\/v1\/auth\/email-change\/)[^/?#]+/,
];

/** The URL with any token segment replaced by `[REDACTED]`; the query string is dropped (it may hold cursors). */
export function redactUrl(url: string): string {
  const path = url.split('?')[0] ?? url;
  for (const pattern of TOKEN_PATHS) {
    if (pattern.test(path)) return path.replace(pattern, '$1[REDACTED]');
  }
  return path;
}
