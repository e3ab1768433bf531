// Request and response bodies of the token endpoints: sign in, refresh, sign out.
import { Type } from '@sinclair/typebox';
import { named, StrictObject } from '../../lib/http-schemas.js';

/** A password field. 4,096 characters at most in a body; the rules' byte limit (1,024) applies after that. */
export const Password = (options: { description?: string } = {}) => Type.String({ minLength: 1, maxLength: 4096, ...options });

export const TokenPairSchema = Type.Object(
  {
    access: Type.String({ description: 'Access JWT: send it as `Authorization: Bearer <access>`.' }),
    refresh: Type.String({ description: 'Refresh JWT: single use; store the new one every refresh returns.' }),
  },
  {
    ...named('TokenPair'),
    description: 'The tokens of a session: a short-lived access token and the refresh token that renews it.',
    examples: [
      { access: 'eyJhbGciOiJIUzI1NiJ9.example-access-claims.signature', refresh: 'eyJhbGciOiJIUzI1NiJ9.example-refresh-claims.signature' },
    ],
  },
);

export const SignInSchema = StrictObject(
  {
    username: Type.String({ minLength: 1, maxLength: 150, description: 'Exact username (email addresses are not accepted).' }),
    password: Password(),
  },
  { ...named('SignIn'), examples: [{ username: 'ada', password: 'correct-horse-battery' }] },
);

/** Body of refresh and logout: the refresh token of one session. */
export const RefreshTokenBodySchema = StrictObject(
  {
    refresh: Type.String({
      minLength: 1,
      maxLength: 2048,
      // A compact JWS (three base64url segments); anything else is a malformed token (400), not an invalid one (401).
      pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$',
      description: 'Refresh JWT of the session.',
    }),
  },
  { ...named('RefreshToken') },
);

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const AUTH_SCHEMAS = [TokenPairSchema, SignInSchema, RefreshTokenBodySchema];
