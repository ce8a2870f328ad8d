CREATE TABLE "session_payloads" (
	"escrow_id" numeric(20, 0) NOT NULL,
	"inference_id" numeric(20, 0) NOT NULL,
	"prompt" "bytea" NOT NULL,
	"model" text NOT NULL,
	"input_length" numeric(20, 0) NOT NULL,
	"max_tokens" numeric(20, 0) NOT NULL,
	"started_at" numeric(20, 0) NOT NULL,
	CONSTRAINT "session_payloads_escrow_id_inference_id_pk" PRIMARY KEY("escrow_id","inference_id")
);
--> statement-breakpoint
CREATE TABLE "session_snapshots" (
	"escrow_id" numeric(20, 0) NOT NULL,
	"nonce" numeric(20, 0) NOT NULL,
	"root" "bytea" NOT NULL,
	"state" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "session_snapshots_escrow_id_nonce_pk" PRIMARY KEY("escrow_id","nonce")
);
--> statement-breakpoint
ALTER TABLE "session_diffs" DROP CONSTRAINT "session_diffs_escrow_id_escrows_escrow_id_fk";
--> statement-breakpoint
ALTER TABLE "session_heads" DROP CONSTRAINT "session_heads_escrow_id_escrows_escrow_id_fk";
--> statement-breakpoint
ALTER TABLE "session_host_progress" DROP CONSTRAINT "session_host_progress_escrow_id_escrows_escrow_id_fk";
--> statement-breakpoint
ALTER TABLE "session_pending_txs" DROP CONSTRAINT "session_pending_txs_escrow_id_escrows_escrow_id_fk";
--> statement-breakpoint
ALTER TABLE "session_state_signatures" DROP CONSTRAINT "session_state_signatures_escrow_id_escrows_escrow_id_fk";
--> statement-breakpoint
ALTER TABLE "session_pending_txs" ALTER COLUMN "priority" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "session_diffs" ADD COLUMN "root" "bytea" NOT NULL;--> statement-breakpoint
ALTER TABLE "session_heads" ADD COLUMN "record" jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "session_heads" ADD COLUMN "finalize_document" text;--> statement-breakpoint
ALTER TABLE "session_heads" ADD COLUMN "created_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "session_pending_txs" ADD COLUMN "seq" bigint NOT NULL GENERATED ALWAYS AS IDENTITY (sequence name "session_pending_txs_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1);--> statement-breakpoint
ALTER TABLE "session_payloads" ADD CONSTRAINT "session_payloads_escrow_id_session_heads_escrow_id_fk" FOREIGN KEY ("escrow_id") REFERENCES "public"."session_heads"("escrow_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_snapshots" ADD CONSTRAINT "session_snapshots_escrow_id_session_heads_escrow_id_fk" FOREIGN KEY ("escrow_id") REFERENCES "public"."session_heads"("escrow_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_diffs" ADD CONSTRAINT "session_diffs_escrow_id_session_heads_escrow_id_fk" FOREIGN KEY ("escrow_id") REFERENCES "public"."session_heads"("escrow_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_host_progress" ADD CONSTRAINT "session_host_progress_escrow_id_session_heads_escrow_id_fk" FOREIGN KEY ("escrow_id") REFERENCES "public"."session_heads"("escrow_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_pending_txs" ADD CONSTRAINT "session_pending_txs_escrow_id_session_heads_escrow_id_fk" FOREIGN KEY ("escrow_id") REFERENCES "public"."session_heads"("escrow_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_state_signatures" ADD CONSTRAINT "session_state_signatures_escrow_id_session_heads_escrow_id_fk" FOREIGN KEY ("escrow_id") REFERENCES "public"."session_heads"("escrow_id") ON DELETE cascade ON UPDATE no action;