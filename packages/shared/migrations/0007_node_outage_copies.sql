CREATE TABLE "escrow_hosts" (
	"escrow_id" numeric(20, 0) NOT NULL,
	"participant" text NOT NULL,
	"inference_url" text NOT NULL,
	"confirmed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "escrow_hosts_escrow_id_participant_pk" PRIMARY KEY("escrow_id","participant")
);
--> statement-breakpoint
CREATE TABLE "last_known_reads" (
	"name" text PRIMARY KEY NOT NULL,
	"body" jsonb NOT NULL,
	"read_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "escrow_hosts" ADD CONSTRAINT "escrow_hosts_escrow_id_session_heads_escrow_id_fk" FOREIGN KEY ("escrow_id") REFERENCES "public"."session_heads"("escrow_id") ON DELETE cascade ON UPDATE no action;