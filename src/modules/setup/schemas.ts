// Request and response bodies of first-run setup and of its SMTP test.
import { Type, type Static } from '@sinclair/typebox';
import { Email, named, Ref, StrictObject } from '../../lib/http-schemas.js';
import { Password } from '../auth/schemas.js';
import { NAME_MAX_LENGTH, SLUG_MAX_LENGTH, SLUG_PATTERN } from '../organizations/schemas.js';
import { SmtpAccountInputSchema } from '../../email/smtp-account-input.js';

export const SetupAvailabilitySchema = Type.Object(
  {
    available: Type.Boolean({
      description:
        'true while setup can run: a setup token of at least 32 characters is configured and the installation has no ' +
        'users and no workspaces yet.',
    }),
  },
  { ...named('SetupAvailability'), description: 'Whether first-run setup can run now.' },
);

const SetupToken = Type.String({
  minLength: 1,
  maxLength: 1024,
  description: "The server's SERVICE_SETUP_TOKEN. Never returned or logged.",
});

export const SetupRequestSchema = StrictObject(
  {
    setup_token: SetupToken,
    username: Type.String({
      minLength: 1,
      maxLength: 150,
      pattern: '^[\\w.@+-]+$',
      description: 'Letters, digits and @ . + - _ only.',
    }),
    email: Email(),
    password: Password({ description: 'At least 8 characters, not entirely numeric, not the username or email.' }),
    organization_name: Type.String({ minLength: 1, maxLength: NAME_MAX_LENGTH, description: 'Name of the first workspace.' }),
    organization_slug: Type.String({
      minLength: 1,
      maxLength: SLUG_MAX_LENGTH,
      pattern: SLUG_PATTERN,
      description: 'Lower-case letters and digits in dash-separated groups.',
    }),
    smtp: Type.Optional(Ref(SmtpAccountInputSchema)),
  },
  {
    ...named('SetupRequest'),
    examples: [
      {
        setup_token: '<the value of SERVICE_SETUP_TOKEN>',
        username: 'admin',
        email: 'admin@acme.example',
        password: 'correct-horse-battery',
        organization_name: 'Acme',
        organization_slug: 'acme',
      },
    ],
  },
);
export type SetupRequest = Static<typeof SetupRequestSchema>;

export const SmtpTestRequestSchema = StrictObject(
  {
    setup_token: SetupToken,
    recipient: Email({ description: 'Address that receives the test message.' }),
    smtp: Ref(SmtpAccountInputSchema),
  },
  named('SmtpTestRequest'),
);
export type SmtpTestRequest = Static<typeof SmtpTestRequestSchema>;

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const SETUP_SCHEMAS = [SetupAvailabilitySchema, SetupRequestSchema, SmtpTestRequestSchema];
