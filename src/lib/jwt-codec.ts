// Signing and verifying the service's JWTs, as the token service needs it and the auth plugin provides it.

/** Signs and verifies the service's JWTs (HS256); the token service issues and rotates them. */
export interface JwtCodec {
  sign(payload: Record<string, unknown>, options: { expiresIn: number }): string;
  verify(token: string): Record<string, unknown>;
}
