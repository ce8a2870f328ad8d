// Test support of the escrow runtime (behind the `./testing` export, never in the production face).
export {};
