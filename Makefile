# The project's commands. `make run` and `make test` work on a fresh machine with only Node and npm.
SHELL := /bin/bash
.DEFAULT_GOAL := help
DATA_DIR ?= .data
NPM_FLAGS := --no-audit --no-fund --loglevel=error
# Everything after the install runs on the Node pinned in package.json (the `node` package), whatever Node is on the
# PATH: npm on the system's Node only installs it.
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)

# fuzz: see test/fuzz/. FUZZ_RUNS and FUZZ_SEED choose the size and the sequence.
BACKUP_DIR ?= backups
.PHONY: bench-queries bench-streams bench-batches bench-custom-fields contract-diff stack bench-stack bench-compare bench-deliveries bench-csv backup restore-test demo fuzz help install generate build run dev test typecheck lint format lint-openapi migrate migration migration-check openapi bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

node_modules/.package-lock.json: package.json package-lock.json
	npm ci $(NPM_FLAGS)

install: node_modules/.package-lock.json ## install the exact dependencies of package-lock.json

generate: install ## generate the Prisma client (offline)
	npm run --silent generate

build: generate ## compile TypeScript to dist/
	npx tsc -p tsconfig.build.json

# Development secrets are generated once into $(DATA_DIR) so restarts keep them; production sets real ones.
$(DATA_DIR)/setup-token:
	@mkdir -p $(DATA_DIR) && umask 077 && node -e "process.stdout.write(require('crypto').randomBytes(32).toString('base64url'))" > $@

$(DATA_DIR)/email-encryption-key:
	@mkdir -p $(DATA_DIR) && umask 077 && node -e "process.stdout.write(require('crypto').randomBytes(32).toString('base64'))" > $@

run: build $(DATA_DIR)/setup-token $(DATA_DIR)/email-encryption-key ## install, build and start the API on the embedded PostgreSQL
	DATA_DIR=$(DATA_DIR) \
	SERVICE_SETUP_TOKEN="$${SERVICE_SETUP_TOKEN:-$$(cat $(DATA_DIR)/setup-token)}" \
	EMAIL_ENCRYPTION_KEY="$${EMAIL_ENCRYPTION_KEY:-$$(cat $(DATA_DIR)/email-encryption-key)}" \
	npm start

dev: generate $(DATA_DIR)/setup-token $(DATA_DIR)/email-encryption-key ## start with reload on change
	DATA_DIR=$(DATA_DIR) \
	SERVICE_SETUP_TOKEN="$${SERVICE_SETUP_TOKEN:-$$(cat $(DATA_DIR)/setup-token)}" \
	EMAIL_ENCRYPTION_KEY="$${EMAIL_ENCRYPTION_KEY:-$$(cat $(DATA_DIR)/email-encryption-key)}" \
	npm run dev

typecheck: generate ## type-check sources and tests
	npx tsc -p tsconfig.json --noEmit

# Biome (biome.json): formatting and the recommended lint rules; `make format` applies its formatting and safe fixes.
lint: install ## check formatting and lint rules of src/, test/ and scripts/ (no changes)
	biome ci --error-on-warnings src test scripts prisma.config.ts

format: install ## format and apply safe lint fixes
	biome check --write src test scripts prisma.config.ts

# Redocly's recommended rules, with the exceptions (and their reasons) in redocly.yaml and .redocly.lint-ignore.yaml.
lint-openapi: install ## lint openapi/openapi.json: zero errors and zero warnings
	@out="$$(redocly lint --max-problems 1000 openapi/openapi.json 2>&1)"; status=$$?; echo "$$out"; \
	  test $$status -eq 0 || exit $$status; \
	  if echo "$$out" | grep -q 'You have [0-9]* warning'; then echo 'make lint-openapi: warnings fail the lint' >&2; exit 1; fi

# The part of the suite that runs a second time through PgBouncer in transaction mode (Debian's 1.18: no prepared
# statements kept across transactions): every CRM read and write, sign-in and tokens, automations and their job
# queue, idempotency, tenancy and invitations, and CSV imports (the import thread opens its own connection).
PGBOUNCER_TESTS := test/companies test/contacts test/auth test/automations test/idempotency test/tenancy test/invitations test/email test/imports test/notes test/batches test/query

test: build typecheck lint lint-openapi ## install, build and run the whole test suite (embedded PostgreSQL, real SMTP server), then a part of it through PgBouncer
	npm test
	@command -v pgbouncer >/dev/null || test -x /usr/sbin/pgbouncer || { echo 'make test needs PgBouncer for its pooler run: apt-get install pgbouncer' >&2; exit 1; }
	TEST_VIA_PGBOUNCER=1 npm test -- $(PGBOUNCER_TESTS)

migrate: generate ## apply pending migrations to DATABASE_URL (or the embedded database in DATA_DIR)
	DATA_DIR=$(DATA_DIR) npm run --silent migrate

migration: generate ## create a migration from schema.prisma changes: make migration name=add_something
	@test -n "$(name)" || { echo 'usage: make migration name=<snake_case_name>'; exit 2; }
	npm run --silent migration:create -- $(name)
	npm run --silent generate

migration-check: generate ## fail when schema.prisma and prisma/migrations disagree
	npm run --silent migration:check

openapi: generate ## regenerate openapi/openapi.json from the route schemas
	npm run --silent openapi

# The load generator is Debian's wrk (a C program, light on the cores the servers share); installed here when missing.
bench: build ## seed 1M companies and measure the API and a bare baseline with wrk (not part of make test)
	@command -v wrk >/dev/null || { echo 'installing wrk (apt-get)'; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; } \
	  || { echo 'make bench needs wrk: apt-get install wrk' >&2; exit 1; }
	node --import tsx scripts/bench.ts
	node --import tsx scripts/bench-csv.ts

# Main before issues 43 (the record kernel) and 44 (row-level security), which must keep its list, search and create.
BENCH_BASE_REF ?= c1bd1fa
bench-compare: build ## this build against BENCH_BASE_REF on the same million rows: list, search, create (median of 5)
	@command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; } \
	  || { echo 'make bench-compare needs wrk: apt-get install wrk' >&2; exit 1; }
	BENCH_BASE_REF=$(BENCH_BASE_REF) node --import tsx scripts/bench-compare.ts

bench-queries: build ## issue 46's query cells on 1M companies and 1M contacts with spread owners, stages, countries: idle page, p99 of 20 clients, index sizes
	@command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; } \
	  || { echo 'make bench-queries needs wrk: apt-get install wrk' >&2; exit 1; }
	node --import tsx scripts/bench-queries.ts

bench-batches: build ## issue 48's batches: 100 creates in one batch vs 100 single creates (one client), a 100-operation batch under 4 clients
	@command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; } \
	  || { echo 'make bench-batches needs wrk: apt-get install wrk' >&2; exit 1; }
	node --import tsx scripts/bench-batches.ts

# The webhook burst of issue 49; DELIVERIES_BASE_REF (e.g. the main before the batched deliveries) adds a side by side run.
DELIVERIES_BASE_REF ?=
bench-deliveries: build ## webhook burst: 2,000 creates from 16 clients, with and without one rule (lag, p50/p99, CPU per delivery)
	BENCH_BASE_REF=$(DELIVERIES_BASE_REF) node --import tsx scripts/bench-deliveries.ts

bench-custom-fields: build ## issue 47: a create with 10 custom values vs none (one client: p50, CPU per create), an import of 100k companies with 5 custom columns
	node --import tsx scripts/bench-custom-fields.ts

bench-streams: build ## 1,000 change streams (100 in each of 10 workspaces) at 100 creates/s for 30 s: p50/p99 create→stream, RSS
	node --import tsx scripts/bench-streams.ts

bench-csv: build ## the CSV targets alone: export 1M companies (time, RSS growth), import 100k (time, list p99 meanwhile)
	@command -v wrk >/dev/null || { echo 'installing wrk (apt-get)'; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; } \
	  || { echo 'make bench-csv needs wrk: apt-get install wrk' >&2; exit 1; }
	node --import tsx scripts/bench-csv.ts

fuzz: build ## fuzz every OpenAPI operation with 10,000 generated requests (FUZZ_RUNS, FUZZ_SEED) and 22 request shapes the schemas do not describe; prints counts
	FUZZ_RUNS=$${FUZZ_RUNS:-10000} npm test -- --timeout=3600 test/fuzz/fuzz.test.ts

# Debian's packages for the parts in front of the service, installed when missing (as root: apt-get).
stack: build ## primary + replica PostgreSQL, PgBouncer, Redis and two instances behind HAProxy on STACK_PORT (8080); Ctrl-C stops all
	@missing=""; test -x /usr/sbin/pgbouncer || missing="$$missing pgbouncer"; test -x /usr/sbin/haproxy || missing="$$missing haproxy"; \
	  test -x /usr/bin/redis-server || missing="$$missing redis-server"; \
	  if [ -n "$$missing" ]; then echo "installing$$missing (apt-get)"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi
	node --import tsx scripts/stack.ts

bench-stack: build ## list and create through the stack (HAProxy, PgBouncer, replica) against one instance straight on PostgreSQL
	@command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
	node --import tsx scripts/bench-stack.ts

demo: build ## create the demo workspace, user and CRM records (idempotent; refused when NODE_ENV=production) and print the sign-in
	DATA_DIR=$(DATA_DIR) node --import tsx scripts/demo.ts

backup: build ## consistent online backup of the embedded database into BACKUP_DIR (default backups/); recorded in backup-status
	DATA_DIR=$(DATA_DIR) node --import tsx scripts/backup.ts "$(BACKUP_DIR)"

restore-test: build ## restore BACKUP=<dir> (default: the newest in BACKUP_DIR) into a scratch directory and verify it; recorded in backup-status
	DATA_DIR=$(DATA_DIR) node --import tsx scripts/restore-test.ts "$(BACKUP)" "$(BACKUP_DIR)"

clean: ## remove build output (keeps $(DATA_DIR))
	rm -rf dist src/generated .tap

contract-diff: install ## list the breaking API changes from FROM=<git ref> to TO=<git ref> (default: the working copy)
	@test -n "$(FROM)" || { echo 'usage: make contract-diff FROM=<git ref> [TO=<git ref>]'; exit 2; }
	node --import tsx scripts/contract-diff.ts "$(FROM)" $(TO)
