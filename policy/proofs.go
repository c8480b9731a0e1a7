package policy

// proofs names, for every key of the table, the tests that prove the key has its effect (not
// only that it loads): "package.TestName", the package as its files declare it. A key whose
// effect nothing proves is a promise the documentation makes and the code may not keep:
// proofs_test.go fails for a key with no entry here, for a named test that does not exist, for
// one that CI would skip (an unconditional t.Skip, or a skip behind an environment variable CI
// does not set), and for one that never sets the key (proofsets_test.go reads the test, its
// subtests and the helpers it calls: a TOML assignment or the key's Config field, never a
// comment or a message). A key not worth proving is removed from the table, the docs and the
// loader.
var proofs = map[string][]string{
	"box_dirs":       {"e2e.TestKeysHide"},
	"cpus":           {"vm.TestSizeKeysMakeTheBox"},
	"default_agent":  {"e2e.TestAgents"},
	"disk":           {"vm.TestSizeKeysMakeTheBox"},
	"golden":         {"e2e.TestGoldenSnapshotUndo"},
	"hide":           {"e2e.TestKeysHide"},
	"idle_stop":      {"e2e.TestKeysLifecycle", "session.TestIdleStopByItself", "session.TestBoxWatcherEnds"},
	"memory":         {"vm.TestSizeKeysMakeTheBox"},
	"provision":      {"e2e.TestGuardsFullMode"},
	"snapshot":       {"session.TestAutoSnapshot"},
	"snapshots_keep": {"session.TestAutoSnapshot"},
	"stop_on_exit":   {"e2e.TestKeysLifecycle", "session.TestStopOnExitLastSession", "session.TestStopOnExitSessionDuringStop"},

	"agent_state":        {"e2e.TestAgents"},
	"egress_presets":     {"policy.TestEgressPresets", "e2e.TestPresetsInstall"},
	"env":                {"session.TestSessionEnv"},
	"git_identity":       {"e2e.TestKeysLifecycle", "session.TestGitIdentityInSessionEnv"},
	"git_push":           {"session.TestGitTokensThroughBroker"},
	"network":            {"e2e.TestBrokerMode", "e2e.TestOfflineMode"},
	"no_env_passthrough": {"e2e.TestBoxLifecycle", "session.TestSessionEnv", "session.TestSessionEnvTrustedSources"},
	"profile":            {"policy.TestProfileFloor"},
	"readonly_project":   {"vm.TestRenderPromises"},
	"source":             {"e2e.TestCloneBox"},

	"agent_login":       {"session.TestAgentLoginRoute"},
	"agent_min_age":     {"main.TestScripts"}, // testdata/script/agents.txtar
	"agent_versions":    {"main.TestScripts"}, // testdata/script/agents.txtar
	"api_brokers":       {"e2e.TestKeysAPIBrokers"},
	"api_routes":        {"e2e.TestKeysAPIBrokers", "session.TestAPIBrokerRoute"},
	"clone_uncommitted": {"e2e.TestCloneBox"},
	"egress":            {"e2e.TestBrokerMode"},
	"env_file":          {"session.TestSessionEnvTrustedSources"},
	"env_from_host":     {"e2e.TestBoxLifecycle", "session.TestSessionEnvTrustedSources"},
	"forge_api_allow":   {"session.TestForgeAPIThroughBroker"},
	"forward_env":       {"session.TestSessionEnv"},
	"git_push_delete":   {"session.TestGitTokensThroughBroker"},
	"git_push_force":    {"session.TestGitTokensThroughBroker"},
	"git_tokens":        {"e2e.TestBoxLifecycle", "session.TestSessionEnvTrustedSources", "session.TestGitTokensThroughBroker"},
	"image":             {"vm.TestImageKeyMakesTheBox", "session.TestImageKey"},
	"mounts":            {"e2e.TestKeysMountsPorts"},
	"name":              {"session.TestBoxName"},
	"ports":             {"e2e.TestKeysMountsPorts", "e2e.TestGuardsFullMode"},
	"ssh_agent":         {"session.TestSSHAgentKeyForwards", "session.TestAgentSocketWarns"},
	"timeout":           {"session.TestTimeoutKeyEndsRun", "session.TestRunTimeout"},
}

// Proof returns the tests that prove the key's effect ("package.TestName").
func (k KeySpec) Proof() []string { return proofs[k.Name] }
