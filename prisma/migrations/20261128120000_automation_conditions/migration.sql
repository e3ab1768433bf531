-- A rule's condition: a query filter tree (JSON) checked on the event's record before its action runs; null: always.
ALTER TABLE "automations" ADD COLUMN "condition" JSONB;
