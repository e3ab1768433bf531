-- Automation runs are claimed by the workers from automation_runs itself (FOR UPDATE SKIP LOCKED), not one graphile-worker
-- job each: run_at is when a worker next takes a run (a queued run's due time, a running run's lease end).
ALTER TABLE "automation_runs" ADD COLUMN "run_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;

-- Only runs still waiting or in progress are ever looked up by it; ended runs (nearly all) stay out of the index.
CREATE INDEX "automation_runs_run_at_idx" ON "automation_runs"("run_at") WHERE "status" IN ('queued', 'running');

-- Upgrading: a retry waiting in the job queue keeps its due time, and a run in progress gets a lease of a minute
-- (JOB_RECOVERY_SECONDS' default) before another worker takes it; the old jobs are removed at start (src/jobs/install.ts).
UPDATE "automation_runs" SET "run_at" = CURRENT_TIMESTAMP + interval '60 seconds' WHERE "status" = 'running';
DO $$
BEGIN
  IF to_regclass('graphile_worker.jobs') IS NOT NULL THEN
    UPDATE "automation_runs" r SET "run_at" = j.run_at
    FROM graphile_worker.jobs j
    WHERE j.task_identifier = 'automation_run' AND j.key = 'automation_run:' || r.id AND r.status = 'queued';
  END IF;
END
$$;
