// The catalogue of every problem `code` the API answers: the one place a new code is added, and its meaning.

/** Code → what it means for a client. Published in the OpenAPI document as the `Problem.code` enum. */
export const ERROR_CODES = {
  // Request shape
  validation_failed: 'A field, query parameter or path parameter is invalid; `errors` lists the messages per field.',
  malformed_json: 'The body is not valid JSON.',
  bad_request: 'The request could not be processed (malformed URL, wrong Content-Length).',
  payload_too_large: 'The body exceeds 1 MiB.',
  unsupported_media_type: 'The body is not application/json.',
  uri_too_long: 'A path parameter is too long.',
  not_found: 'No such endpoint or resource.',
  // Authentication
  not_authenticated: 'No credentials were sent.',
  token_not_valid: 'The token is invalid, expired or revoked (its session ended, the password changed, the user was deactivated).',
  invalid_credentials: 'Wrong username or password.',
  wrong_password: 'The current password is wrong.',
  password_required: 'The current password is required for this change.',
  two_factor_required:
    'Sign-in: the account has two-factor sign-in on; send the `challenge` with a code to POST /auth/token/two-factor/. ' +
    'Workspace: it requires two-factor sign-in; enrol with POST /auth/me/two-factor/.',
  two_factor_challenge_invalid: 'The two-factor challenge is unknown, used, expired or out of attempts: sign in again.',
  two_factor_code_invalid: 'The two-factor code or recovery code is wrong, or was already used.',
  two_factor_attempts_exceeded: 'Too many wrong two-factor codes for this account; see Retry-After.',
  two_factor_already_enabled: 'Two-factor sign-in is already on; disable it first to enrol a new authenticator.',
  two_factor_not_enabled: 'Two-factor sign-in is not on for this account.',
  two_factor_not_pending: 'No two-factor enrolment is waiting for confirmation: start one first.',
  two_factor_unavailable: 'The server cannot read TOTP secrets (EMAIL_ENCRYPTION_KEY missing or changed): use a recovery code.',
  // Permissions
  permission_denied: "The caller's role does not allow this action.",
  installation_admin_required: 'Only an installation administrator can do this.',
  owner_required: 'Only the workspace owner can do this.',
  owner_role_locked: "The owner's role changes only through an ownership transfer.",
  owner_cannot_be_removed: 'The owner cannot be removed; transfer ownership first.',
  owner_of_workspace: 'The account owns a workspace; transfer or delete it first.',
  personal_workspace: 'Not possible in a personal workspace.',
  admin_invite_requires_owner: 'Only the owner invites admins or manages admin invitations.',
  invitation_email_mismatch: "The signed-in account's email is not the invited address.",
  last_installation_admin: 'The last active installation administrator cannot lose that status.',
  last_superuser: 'The last active installation administrator cannot be deactivated.',
  // Not found (each resource its own code, all 404)
  organization_not_found: 'No such workspace, or the caller is not a member of it.',
  member_not_found: 'No such membership in this workspace.',
  session_not_found: 'No such live session of the caller.',
  invitation_not_found: 'No such invitation in this workspace.',
  invitation_invalid: 'The invitation link is unknown, used, expired or revoked.',
  provisioning_not_found: 'No such pending workspace for this caller.',
  company_not_found: 'No such company in this workspace.',
  contact_not_found: 'No such contact in this workspace.',
  automation_not_found: 'No such automation in this workspace.',
  email_account_not_found: 'No such email account in this workspace.',
  reset_link_invalid: 'The password reset link is unknown, used or expired.',
  email_change_invalid: 'The email change link is unknown, used or expired.',
  // Conflicts
  account_exists: 'The invited address already has an account: sign in and accept with it.',
  username_taken: 'The username is taken.',
  email_taken: 'The email address belongs to another account.',
  slug_taken: 'The workspace slug is taken.',
  already_member: 'The address belongs to a member of the workspace.',
  already_administrator: 'The address belongs to an installation administrator.',
  invitation_pending: 'A pending invitation for the address exists: resend or revoke it.',
  invitation_not_pending: 'The invitation is no longer pending.',
  invitation_accepted: 'The invitation was accepted.',
  personal_workspace_exists: 'The caller already has a personal workspace.',
  installation_not_initialized: 'The installation is not set up yet.',
  setup_closed: 'Setup has already been completed.',
  idempotency_request_in_progress: 'A request with this Idempotency-Key is still being handled.',
  idempotency_key_reused: 'The Idempotency-Key was used for a different request.',
  precondition_failed:
    "If-Match names none of the record's current ETags: it changed since the caller read it. Read it again (GET), merge, retry with the new ETag.",
  // Setup and configuration
  invalid_setup_token: 'The setup token is wrong.',
  setup_unavailable: 'Setup is disabled: the server has no SERVICE_SETUP_TOKEN.',
  email_not_configured: 'No email account can send this message.',
  encryption_key_missing: 'Storing SMTP credentials, webhook secrets or TOTP secrets needs EMAIL_ENCRYPTION_KEY on the server.',
  // Limits and availability
  rate_limited: 'Too many requests; see Retry-After.',
  rate_limiter_unavailable: 'The shared rate-limit store is unreachable; this limited endpoint refuses until it is back.',
  server_busy: 'Too many password checks are queued; see Retry-After.',
  database_unavailable: 'The database is not reachable; see Retry-After.',
  migrations_pending: 'The database schema is behind the code (readiness).',
  shutting_down: 'This server process is draining before it stops (readiness): a load balancer sends requests elsewhere.',
  smtp_failed: 'The SMTP server refused or could not be reached.',
  internal_error: 'An unexpected error; the server logged it with the request id given as `instance`.',
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;
