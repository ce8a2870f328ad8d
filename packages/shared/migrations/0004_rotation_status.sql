CREATE TABLE "rotation_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"model_id" text NOT NULL,
	"marker" text NOT NULL,
	"epoch" numeric(20, 0),
	"detail" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rotation_stages" (
	"model_id" text NOT NULL,
	"epoch" numeric(20, 0) NOT NULL,
	"stage" text NOT NULL,
	"status" text DEFAULT 'creating' NOT NULL,
	"role" text NOT NULL,
	"target" integer NOT NULL,
	"existing" integer DEFAULT 0 NOT NULL,
	"created" integer DEFAULT 0 NOT NULL,
	"promoted" integer DEFAULT 0 NOT NULL,
	"settled" integer DEFAULT 0 NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	"retiring" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"replacement_routed_at" timestamp with time zone,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "rotation_stages_model_id_epoch_stage_pk" PRIMARY KEY("model_id","epoch","stage"),
	CONSTRAINT "rotation_stages_stage_known" CHECK ("rotation_stages"."stage" in ('bridge', 'target')),
	CONSTRAINT "rotation_stages_status_known" CHECK ("rotation_stages"."status" in ('creating', 'retiring', 'done'))
);
--> statement-breakpoint
CREATE TABLE "rotation_suppressions" (
	"model_id" text NOT NULL,
	"role" text NOT NULL,
	"epoch" numeric(20, 0) NOT NULL,
	"error" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "rotation_suppressions_model_id_role_epoch_pk" PRIMARY KEY("model_id","role","epoch")
);
--> statement-breakpoint
CREATE INDEX "rotation_events_model_idx" ON "rotation_events" USING btree ("model_id","id");