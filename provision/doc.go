// Package provision owns everything that runs inside the box at boot: the product's guest scripts
// (embedded, numbered, idempotent), the nftables rulesets of the broker and offline lockdowns, the
// privilege drop, the guest half of the git shadow, and the repository's own provision scripts
// together with their review and approval state.
//
// It does not own host networking.
package provision
