-- The privacy policy version a person last accepted, and when (PRIVACY_POLICY_VERSION; beside marketing consent).
-- AlterTable
ALTER TABLE "profiles" ADD COLUMN     "privacy_policy_accepted_at" TIMESTAMPTZ(3),
ADD COLUMN     "privacy_policy_version" VARCHAR(64);
