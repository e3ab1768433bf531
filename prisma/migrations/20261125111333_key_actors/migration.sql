-- Key actors: the audit log, imports and task completion record a workspace API key as the actor.
-- AlterTable
ALTER TABLE "audit_log" ADD COLUMN     "actor_api_key_id" UUID,
ADD COLUMN     "actor_api_key_name" VARCHAR(100),
ADD COLUMN     "actor_api_key_prefix" VARCHAR(32);

-- AlterTable
ALTER TABLE "imports" ADD COLUMN     "created_by_api_key_id" UUID,
ADD COLUMN     "created_by_id" UUID;

-- AlterTable
ALTER TABLE "tasks" ADD COLUMN     "completed_by_api_key_id" UUID;

-- CreateIndex
CREATE INDEX "audit_log_actor_api_key_id_created_at_idx" ON "audit_log"("actor_api_key_id", "created_at" DESC);

-- A workspace API key is an actor of its own (its id, name and prefix), never the user who created it. Widening the
-- allowed set cannot fail on existing rows; an api_key row must name its key.
ALTER TABLE "audit_log" DROP CONSTRAINT "audit_log_actor_type_check";
ALTER TABLE "audit_log" ADD CONSTRAINT "audit_log_actor_type_check"
  CHECK ("actor_type" IN ('user', 'api_key', 'setup', 'system') AND ("actor_type" <> 'api_key' OR "actor_api_key_id" IS NOT NULL));
