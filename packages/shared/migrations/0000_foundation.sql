CREATE TABLE "admin_audit_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"target" text,
	"request" jsonb,
	"status_code" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"key_hash" "bytea" NOT NULL,
	"display_prefix" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "chain_tx_commitments" (
	"tx_hash" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"business_key" text NOT NULL,
	"escrow_id" numeric(20, 0),
	"tx_bytes" "bytea" NOT NULL,
	"status" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"code" integer,
	"codespace" text,
	"raw_log" text,
	"height" numeric(20, 0),
	"result" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "chain_tx_commitments_kind_known" CHECK ("chain_tx_commitments"."kind" in ('create_escrow', 'settle_escrow', 'publish_pubkey')),
	CONSTRAINT "chain_tx_commitments_status_known" CHECK ("chain_tx_commitments"."status" in ('prepared', 'broadcast', 'included', 'failed', 'unknown', 'expired'))
);
--> statement-breakpoint
CREATE TABLE "escrows" (
	"escrow_id" numeric(20, 0) PRIMARY KEY NOT NULL,
	"chain_id" text NOT NULL,
	"model_id" text NOT NULL,
	"creator" text NOT NULL,
	"amount" numeric(20, 0) NOT NULL,
	"epoch_index" numeric(20, 0) NOT NULL,
	"version" text NOT NULL,
	"state" text NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"role" text DEFAULT 'manual' NOT NULL,
	"chain_row" jsonb NOT NULL,
	"signer_key_env" text,
	"signer_key_encrypted" "bytea",
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "escrows_state_known" CHECK ("escrows"."state" in ('creating', 'active', 'draining', 'finalizing', 'finalized', 'settling', 'settled', 'failed')),
	CONSTRAINT "escrows_role_known" CHECK ("escrows"."role" in ('manual', 'regular', 'temp')),
	CONSTRAINT "escrows_signer_key_source" CHECK ("escrows"."signer_key_env" is null or "escrows"."signer_key_encrypted" is null)
);
--> statement-breakpoint
CREATE TABLE "finalize_documents" (
	"escrow_id" numeric(20, 0) PRIMARY KEY NOT NULL,
	"nonce" numeric(20, 0) NOT NULL,
	"version" text NOT NULL,
	"state_root" "bytea" NOT NULL,
	"fees" numeric(20, 0) NOT NULL,
	"document" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "session_diffs" (
	"escrow_id" numeric(20, 0) NOT NULL,
	"nonce" numeric(20, 0) NOT NULL,
	"txs" "bytea" NOT NULL,
	"user_sig" "bytea" NOT NULL,
	"post_state_root" "bytea",
	"warm_key_bindings" jsonb,
	"fencing_token" bigint NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "session_diffs_escrow_id_nonce_pk" PRIMARY KEY("escrow_id","nonce")
);
--> statement-breakpoint
CREATE TABLE "session_heads" (
	"escrow_id" numeric(20, 0) PRIMARY KEY NOT NULL,
	"last_nonce" numeric(20, 0) DEFAULT 0 NOT NULL,
	"fencing_token" bigint DEFAULT 0 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "session_host_progress" (
	"escrow_id" numeric(20, 0) NOT NULL,
	"host_address" text NOT NULL,
	"synced_nonce" numeric(20, 0) DEFAULT 0 NOT NULL,
	"last_error" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "session_host_progress_escrow_id_host_address_pk" PRIMARY KEY("escrow_id","host_address")
);
--> statement-breakpoint
CREATE TABLE "session_pending_txs" (
	"escrow_id" numeric(20, 0) NOT NULL,
	"dedup_key" text NOT NULL,
	"tx" "bytea" NOT NULL,
	"priority" smallint NOT NULL,
	"included_in_nonce" numeric(20, 0),
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "session_pending_txs_escrow_id_dedup_key_pk" PRIMARY KEY("escrow_id","dedup_key")
);
--> statement-breakpoint
CREATE TABLE "session_state_signatures" (
	"escrow_id" numeric(20, 0) NOT NULL,
	"nonce" numeric(20, 0) NOT NULL,
	"slot_id" integer NOT NULL,
	"state_root" "bytea" NOT NULL,
	"signature" "bytea" NOT NULL,
	"signer" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "session_state_signatures_escrow_id_nonce_slot_id_pk" PRIMARY KEY("escrow_id","nonce","slot_id")
);
--> statement-breakpoint
CREATE TABLE "settings" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"default_request_max_tokens" integer NOT NULL,
	"request_max_tokens_cap" integer NOT NULL,
	"model_limits" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"escrow_rotation" jsonb NOT NULL,
	"disabled" jsonb NOT NULL,
	"revision" bigint DEFAULT 1 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "settings_single_row" CHECK ("settings"."id" = 1)
);
--> statement-breakpoint
ALTER TABLE "finalize_documents" ADD CONSTRAINT "finalize_documents_escrow_id_escrows_escrow_id_fk" FOREIGN KEY ("escrow_id") REFERENCES "public"."escrows"("escrow_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_diffs" ADD CONSTRAINT "session_diffs_escrow_id_escrows_escrow_id_fk" FOREIGN KEY ("escrow_id") REFERENCES "public"."escrows"("escrow_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_heads" ADD CONSTRAINT "session_heads_escrow_id_escrows_escrow_id_fk" FOREIGN KEY ("escrow_id") REFERENCES "public"."escrows"("escrow_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_host_progress" ADD CONSTRAINT "session_host_progress_escrow_id_escrows_escrow_id_fk" FOREIGN KEY ("escrow_id") REFERENCES "public"."escrows"("escrow_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_pending_txs" ADD CONSTRAINT "session_pending_txs_escrow_id_escrows_escrow_id_fk" FOREIGN KEY ("escrow_id") REFERENCES "public"."escrows"("escrow_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_state_signatures" ADD CONSTRAINT "session_state_signatures_escrow_id_escrows_escrow_id_fk" FOREIGN KEY ("escrow_id") REFERENCES "public"."escrows"("escrow_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "admin_audit_log_at_idx" ON "admin_audit_log" USING btree ("at");--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_key_hash_idx" ON "api_keys" USING btree ("key_hash");--> statement-breakpoint
CREATE INDEX "chain_tx_commitments_business_key_idx" ON "chain_tx_commitments" USING btree ("business_key");--> statement-breakpoint
CREATE INDEX "chain_tx_commitments_status_idx" ON "chain_tx_commitments" USING btree ("status");--> statement-breakpoint
CREATE INDEX "escrows_state_model_idx" ON "escrows" USING btree ("state","model_id");