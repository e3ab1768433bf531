-- A rule's runs outlive it: deleting a rule keeps its history, with the deleted rule's id in automation_id.
ALTER TABLE "automation_runs" DROP CONSTRAINT "automation_runs_organization_id_automation_id_fkey";
