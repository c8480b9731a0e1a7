package policy

// This file defines the profiles. Rules:
//   - a profile is a floor: after every layer is applied, each value the profile names is raised
//     to at least the profile's value (in the key's tightening order), never lowered;
//   - every stricter profile includes every floor of the looser ones (built by construction here
//     and checked by TestProfilesInclude);
//   - the repository may raise the profile, never lower it (profile is project-may-tighten).

// Profile is one named floor of guarantees.
type Profile struct {
	// Name is the value of `profile`.
	Name string
	// Guarantees says, in one sentence each, what the profile adds to the looser ones.
	Guarantees []string
	// Floor maps keys to the least strict value they may have under this profile (including
	// the floors of every looser profile).
	Floor map[string]any
}

// profiles lists the profiles from loosest to strictest. Each one's Floor is completed with its
// predecessors' floors by init, so a stricter profile cannot forget a looser one's guarantee.
var profiles = []*Profile{
	{Name: "standard", Guarantees: []string{
		"git metadata is shadowed in the box and verified from the host after every session (in every profile: no key turns it off)",
	}, Floor: map[string]any{}},
	{Name: "strict", Guarantees: []string{
		"the box reaches the network only through the host-side broker (network at least broker)",
		"nothing from the host environment reaches the box (no_env_passthrough)",
		"the agent's host state is copied in, never mounted (agent_state at least seeded)",
	}, Floor: map[string]any{"network": "broker", "no_env_passthrough": true, "agent_state": "seeded"}},
	{Name: "locked", Guarantees: []string{
		"no network at all (network offline)",
		"the project is mounted read-only (readonly_project)",
		"the agent starts with no host state (agent_state isolated)",
		"commits carry no host identity (git_identity at least corral)",
	}, Floor: map[string]any{"network": "offline", "readonly_project": true, "agent_state": "isolated", "git_identity": "corral"}},
}

func init() {
	for i := 1; i < len(profiles); i++ {
		for k, v := range profiles[i-1].Floor {
			if _, ok := profiles[i].Floor[k]; !ok {
				profiles[i].Floor[k] = v
			}
		}
	}
}

// Profiles returns the profiles from loosest to strictest.
func Profiles() []*Profile { return profiles }

// profileOrder is the tightening order of `profile`.
func profileOrder() []string {
	return []string{"standard", "strict", "locked"}
}

// lookupProfile returns the profile called name, or nil.
func lookupProfile(name string) *Profile {
	for _, p := range profiles {
		if p.Name == name {
			return p
		}
	}
	return nil
}
