-- CreateTable
CREATE TABLE "api_key_idempotency_keys" (
    "api_key_id" UUID NOT NULL,
    "key" VARCHAR(255) NOT NULL,
    "request_hash" CHAR(64) NOT NULL,
    "response_status" INTEGER,
    "response_content_type" VARCHAR(100),
    "response_body" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "api_key_idempotency_keys_pkey" PRIMARY KEY ("api_key_id","key")
);

-- CreateIndex
CREATE INDEX "api_key_idempotency_keys_created_at_idx" ON "api_key_idempotency_keys"("created_at");

-- AddForeignKey
ALTER TABLE "api_key_idempotency_keys" ADD CONSTRAINT "api_key_idempotency_keys_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE CASCADE;
