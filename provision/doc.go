// Package provision owns everything that runs inside the box at boot: the product's guest scripts
// (embedded under guest/, numbered, idempotent), the nftables rulesets of the broker and offline
// lockdowns, the privilege drop, the guard check, the placing of the git shadow's guest script,
// and the repository's own provision scripts together with their review and approval state.
//
// Files: bundle.go is the contract with vm (Options, Script, Bundle, GuardCheckArgv,
// GuardReport); render.go renders the scripts; nft.go the rulesets; quote.go the one way values
// enter them; scan.go, deps.go, depcall.go, words.go and scandir.go read the repository's
// scripts and every file they pull in; flags.go, review.go and reviewtext.go flag, approve and
// print them.
//
// It does not own host networking, the broker, the Lima template or the gitshadow plan.
package provision
