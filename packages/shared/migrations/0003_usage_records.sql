CREATE TABLE "usage_records" (
	"request_id" text PRIMARY KEY NOT NULL,
	"key_id" text NOT NULL,
	"model" text NOT NULL,
	"escrow_id" numeric(20, 0),
	"nonce" numeric(20, 0),
	"nonces" text DEFAULT '' NOT NULL,
	"input_tokens" integer NOT NULL,
	"output_tokens" integer NOT NULL,
	"cost" numeric(20, 0),
	"cost_final" boolean DEFAULT false NOT NULL,
	"status" smallint NOT NULL,
	"total_ms" integer NOT NULL,
	"ttft_ms" integer,
	"replica_id" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "usage_records_at_idx" ON "usage_records" USING btree ("at");--> statement-breakpoint
CREATE INDEX "usage_records_key_at_idx" ON "usage_records" USING btree ("key_id","at");--> statement-breakpoint
CREATE INDEX "usage_records_escrow_idx" ON "usage_records" USING btree ("escrow_id","nonce");--> statement-breakpoint
CREATE INDEX "usage_records_not_final_idx" ON "usage_records" USING btree ("escrow_id") WHERE "usage_records"."cost_final" = false;