// Request and response bodies of two-factor sign-in: enrolment, confirmation, disabling, and the sign-in challenge.
import { Type } from '@sinclair/typebox';
import { named, ProblemSchema, Ref, StrictObject } from '../../lib/http-schemas.js';
import { Password } from '../auth/schemas.js';

const TotpCode = Type.String({ pattern: '^[0-9]{6}$', description: 'The 6-digit code the authenticator app shows now.' });
const RecoveryCode = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'One of the recovery codes shown at confirmation (dashes and case do not matter); each works once.',
});
const Challenge = Type.String({
  minLength: 1,
  maxLength: 128,
  description: 'The `challenge` of the 401 `two_factor_required` answer of POST /auth/token/.',
});

export const TwoFactorEnrolmentSchema = Type.Object(
  {
    secret: Type.String({ description: 'Base32 TOTP secret (SHA-1, 30-second steps, 6 digits), for typing into an app.' }),
    otpauth_uri: Type.String({ description: '`otpauth://totp/…` URI with the same secret: render it as a QR code.' }),
  },
  {
    ...named('TwoFactorEnrolment'),
    description: 'Shown once, at enrolment; never again after confirmation.',
  },
);

export const TwoFactorCodeSchema = StrictObject({ code: TotpCode }, named('TwoFactorCode'));

export const TwoFactorRecoveryCodesSchema = Type.Object(
  {
    recovery_codes: Type.Array(Type.String(), {
      minItems: 10,
      maxItems: 10,
      description: 'Ten single-use codes for when the authenticator is lost. Shown only now: only their hashes are kept.',
    }),
  },
  named('TwoFactorRecoveryCodes'),
);

export const TwoFactorDisableSchema = StrictObject(
  { password: Password({ description: 'The current password.' }), code: TotpCode },
  named('TwoFactorDisable'),
);

const TwoFactorSignInWithCodeSchema = StrictObject({ challenge: Challenge, code: TotpCode }, named('TwoFactorSignInWithCode'));
const TwoFactorSignInWithRecoveryCodeSchema = StrictObject(
  { challenge: Challenge, recovery_code: RecoveryCode },
  named('TwoFactorSignInWithRecoveryCode'),
);

export const TwoFactorSignInSchema = Type.Union([Ref(TwoFactorSignInWithCodeSchema), Ref(TwoFactorSignInWithRecoveryCodeSchema)], {
  ...named('TwoFactorSignIn'),
  description: 'The challenge and either a current code or a recovery code.',
});

/** The 401 of a password sign-in when two-factor is on: a problem with the challenge to answer. */
export const TwoFactorChallengeProblemSchema = Type.Object(
  {
    ...ProblemSchema.properties,
    challenge: Type.String({
      description:
        'Send it with a code to POST /auth/token/two-factor/. Valid for five minutes and five wrong codes; a secret: do not log it.',
    }),
  },
  {
    ...named('TwoFactorChallengeProblem'),
    description: 'Problem `two_factor_required` of POST /auth/token/: the password was right, a second factor is needed.',
  },
);

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const TWO_FACTOR_SCHEMAS = [
  TwoFactorEnrolmentSchema,
  TwoFactorCodeSchema,
  TwoFactorRecoveryCodesSchema,
  TwoFactorDisableSchema,
  TwoFactorSignInWithCodeSchema,
  TwoFactorSignInWithRecoveryCodeSchema,
  TwoFactorSignInSchema,
  TwoFactorChallengeProblemSchema,
];
