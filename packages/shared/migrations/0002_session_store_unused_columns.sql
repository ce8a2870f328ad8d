ALTER TABLE "session_pending_txs" DROP COLUMN "priority";--> statement-breakpoint
ALTER TABLE "session_pending_txs" DROP COLUMN "included_in_nonce";--> statement-breakpoint
ALTER TABLE "session_state_signatures" DROP COLUMN "state_root";--> statement-breakpoint
ALTER TABLE "session_state_signatures" DROP COLUMN "signer";