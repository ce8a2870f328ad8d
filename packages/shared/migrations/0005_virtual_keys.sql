CREATE TABLE "usage_settings" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"retention_days" integer DEFAULT 0 NOT NULL,
	"metrics_top_keys" integer DEFAULT 10 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "usage_settings_single_row" CHECK ("usage_settings"."id" = 1)
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "models" jsonb;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "budget_ngonka" numeric(20, 0);--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "budget_period" text;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "rpm" integer;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "tpm" integer;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "max_concurrent" integer;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "metadata" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "rotated_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "updated_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_budget_period_known" CHECK ("api_keys"."budget_period" is null or "api_keys"."budget_period" in ('daily', 'weekly', 'monthly', 'total'));