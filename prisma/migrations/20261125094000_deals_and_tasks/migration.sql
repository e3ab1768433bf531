-- CreateEnum
CREATE TYPE "deal_stage" AS ENUM ('lead', 'qualified', 'proposal', 'negotiation', 'won', 'lost');

-- CreateEnum
CREATE TYPE "task_kind" AS ENUM ('task', 'call', 'email', 'meeting');

-- CreateEnum
CREATE TYPE "task_priority" AS ENUM ('low', 'normal', 'high', 'urgent');

-- CreateEnum
CREATE TYPE "task_workflow_status" AS ENUM ('todo', 'in_progress', 'waiting', 'completed');

-- AlterEnum
-- This migration adds more than one value to an enum.
-- With PostgreSQL versions 11 and earlier, this is not possible
-- in a single migration. This can be worked around by creating
-- multiple migrations, each migration adding only one value to
-- the enum.


ALTER TYPE "automation_trigger" ADD VALUE 'deal.stage_changed';
ALTER TYPE "automation_trigger" ADD VALUE 'task.completed';

-- CreateTable
CREATE TABLE "deals" (
    "id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "company_id" UUID NOT NULL,
    "contact_id" UUID,
    "assigned_to" UUID,
    "title" VARCHAR(255) NOT NULL,
    "value" DECIMAL(14,2) NOT NULL DEFAULT 0,
    "currency" CHAR(3) NOT NULL DEFAULT 'EUR',
    "tax_rate" DECIMAL(5,2) NOT NULL DEFAULT 0,
    "amount_includes_tax" BOOLEAN NOT NULL DEFAULT false,
    -- Written by hand: generated columns (Prisma does not model them). Half-up to cents (round() of a non-negative
    -- numeric rounds half away from zero); with amount_includes_tax the value is the gross amount.
    "net_value" DECIMAL(15,2) GENERATED ALWAYS AS (CASE WHEN "amount_includes_tax" THEN round("value" * 100 / (100 + "tax_rate"), 2) ELSE "value" END) STORED,
    "tax_value" DECIMAL(15,2) GENERATED ALWAYS AS (CASE WHEN "amount_includes_tax" THEN "value" - round("value" * 100 / (100 + "tax_rate"), 2) ELSE round("value" * "tax_rate" / 100, 2) END) STORED,
    "gross_value" DECIMAL(15,2) GENERATED ALWAYS AS (CASE WHEN "amount_includes_tax" THEN "value" ELSE "value" + round("value" * "tax_rate" / 100, 2) END) STORED,
    "probability" SMALLINT NOT NULL DEFAULT 0,
    "stage" "deal_stage" NOT NULL DEFAULT 'lead',
    "position" INTEGER,
    "expected_close_date" DATE,
    "lost_reason" VARCHAR(1000),
    "notes" VARCHAR(10000),
    "archived_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "deals_pkey" PRIMARY KEY ("id"),
    -- Written by hand: the API refuses these values first (400); the checks keep every other writer honest.
    CONSTRAINT "deals_value_check" CHECK ("value" >= 0),
    CONSTRAINT "deals_tax_rate_check" CHECK ("tax_rate" >= 0 AND "tax_rate" <= 100),
    CONSTRAINT "deals_probability_check" CHECK ("probability" >= 0 AND "probability" <= 100),
    CONSTRAINT "deals_lost_reason_check" CHECK ("stage" <> 'lost' OR "lost_reason" IS NOT NULL)
);

-- CreateTable
CREATE TABLE "tasks" (
    "id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "company_id" UUID NOT NULL,
    "contact_id" UUID,
    "deal_id" UUID,
    "assigned_to" UUID,
    "title" VARCHAR(255) NOT NULL,
    "kind" "task_kind" NOT NULL DEFAULT 'task',
    "priority" "task_priority" NOT NULL DEFAULT 'normal',
    "workflow_status" "task_workflow_status" NOT NULL DEFAULT 'todo',
    "due_at" TIMESTAMPTZ(3),
    "reminder_at" TIMESTAMPTZ(3),
    "notes" VARCHAR(10000),
    "completed_at" TIMESTAMPTZ(3),
    "completed_by" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "tasks_pkey" PRIMARY KEY ("id"),
    -- Written by hand: completed_at is set exactly while the task is completed (the open-tasks index relies on it).
    CONSTRAINT "tasks_completed_check" CHECK (("workflow_status" = 'completed') = ("completed_at" IS NOT NULL))
);

-- CreateIndex
CREATE INDEX "deals_organization_id_created_at_id_idx" ON "deals"("organization_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "deals_organization_id_stage_position_idx" ON "deals"("organization_id", "stage", "position");

-- CreateIndex
CREATE INDEX "deals_organization_id_company_id_created_at_id_idx" ON "deals"("organization_id", "company_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "deals_contact_id_idx" ON "deals"("contact_id");

-- CreateIndex
CREATE UNIQUE INDEX "deals_organization_id_id_key" ON "deals"("organization_id", "id");

-- CreateIndex
CREATE INDEX "tasks_organization_id_created_at_id_idx" ON "tasks"("organization_id", "created_at" DESC, "id" DESC);

-- CreateIndex
-- Written by hand: partial, "my open tasks, soonest due" (open = not completed) reads only open tasks.
CREATE INDEX "tasks_organization_id_assigned_to_due_at_id_idx" ON "tasks"("organization_id", "assigned_to", "due_at", "id") WHERE "completed_at" IS NULL;

-- CreateIndex
CREATE INDEX "tasks_organization_id_company_id_created_at_id_idx" ON "tasks"("organization_id", "company_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "tasks_organization_id_deal_id_created_at_id_idx" ON "tasks"("organization_id", "deal_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "tasks_contact_id_idx" ON "tasks"("contact_id");

-- CreateIndex
CREATE UNIQUE INDEX "tasks_organization_id_id_key" ON "tasks"("organization_id", "id");

-- AddForeignKey
ALTER TABLE "deals" ADD CONSTRAINT "deals_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deals" ADD CONSTRAINT "deals_organization_id_company_id_fkey" FOREIGN KEY ("organization_id", "company_id") REFERENCES "companies"("organization_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deals" ADD CONSTRAINT "deals_contact_id_fkey" FOREIGN KEY ("contact_id") REFERENCES "contacts"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_organization_id_company_id_fkey" FOREIGN KEY ("organization_id", "company_id") REFERENCES "companies"("organization_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_contact_id_fkey" FOREIGN KEY ("contact_id") REFERENCES "contacts"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_deal_id_fkey" FOREIGN KEY ("deal_id") REFERENCES "deals"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- CreateTable
CREATE TABLE "deal_pipeline_totals" (
    "organization_id" UUID NOT NULL,
    "stage" "deal_stage" NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "count" INTEGER NOT NULL DEFAULT 0,
    "net_value" DECIMAL NOT NULL DEFAULT 0,
    "gross_value" DECIMAL NOT NULL DEFAULT 0,

    CONSTRAINT "deal_pipeline_totals_pkey" PRIMARY KEY ("organization_id","stage","currency")
);

-- Written by hand: keeps deal_pipeline_totals in the transaction of every deal write. Position changes (the board
-- renumbering) do not fire it. The writes of one stage already take turns under the stage's advisory lock.
CREATE FUNCTION deals_pipeline_totals() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.archived_at IS NULL THEN
    UPDATE deal_pipeline_totals
    SET count = count - 1, net_value = net_value - OLD.net_value, gross_value = gross_value - OLD.gross_value
    WHERE organization_id = OLD.organization_id AND stage = OLD.stage AND currency = OLD.currency;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.archived_at IS NULL THEN
    INSERT INTO deal_pipeline_totals AS t (organization_id, stage, currency, count, net_value, gross_value)
    VALUES (NEW.organization_id, NEW.stage, NEW.currency, 1, NEW.net_value, NEW.gross_value)
    ON CONFLICT (organization_id, stage, currency) DO UPDATE
    SET count = t.count + 1, net_value = t.net_value + EXCLUDED.net_value, gross_value = t.gross_value + EXCLUDED.gross_value;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER deals_pipeline_totals
AFTER INSERT OR DELETE OR UPDATE OF organization_id, stage, currency, value, tax_rate, amount_includes_tax, archived_at ON deals
FOR EACH ROW EXECUTE FUNCTION deals_pipeline_totals();
