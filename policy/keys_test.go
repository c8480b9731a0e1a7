package policy

import (
	"reflect"
	"strings"
	"testing"
)

// TestEveryKeyClassifiedAndDocumented fails when a key is added without a trust class, a kind,
// documentation, an example, or (unless project-ok) a reason the repository may not set it.
func TestEveryKeyClassifiedAndDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Keys() {
		if seen[k.Name] {
			t.Errorf("key %q is listed twice", k.Name)
		}
		seen[k.Name] = true
		if k.Class < ProjectOK || k.Class > ProjectMayNarrow {
			t.Errorf("key %q has no trust class", k.Name)
		}
		if k.Kind < KindString || k.Kind > KindRoutes {
			t.Errorf("key %q has no kind", k.Name)
		}
		if len(k.Doc) < 20 || !strings.HasSuffix(k.Doc, ".") {
			t.Errorf("key %q has no documentation sentence: %q", k.Name, k.Doc)
		}
		if k.Class != ProjectOK && k.Why == "" {
			t.Errorf("key %q (%s) does not say why the repository may not set it freely", k.Name, k.Class)
		}
		if k.Example == "" || k.field == nil {
			t.Errorf("key %q has no example or no field", k.Name)
		}
		// git_push and egress_presets are narrowed name by name (gitpush.go, presets.go), not ranked.
		if k.Class == ProjectMayTighten && len(k.Order) == 0 && k.Kind != KindBool && k.Kind != KindStringMap && k.Name != "git_push" && k.Name != "egress_presets" {
			t.Errorf("key %q may be tightened but has no order", k.Name)
		}
	}
}

// TestEveryConfigFieldHasAKey fails when a Config field is added that no key fills, or that two
// keys fill.
func TestEveryConfigFieldHasAKey(t *testing.T) {
	c := &Config{}
	base := reflect.ValueOf(c).Elem()
	owner := map[uintptr]string{}
	for _, k := range keys {
		p := reflect.ValueOf(k.field(c)).Pointer()
		if prev, dup := owner[p]; dup {
			t.Errorf("keys %q and %q fill the same field", prev, k.Name)
		}
		owner[p] = k.Name
	}
	// derived fields are computed by Load from the keys, never set by one.
	derived := map[string]bool{"NetworkDefaulted": true}
	for i := 0; i < base.NumField(); i++ {
		if _, ok := owner[base.Field(i).Addr().Pointer()]; !ok && !derived[base.Type().Field(i).Name] {
			t.Errorf("Config.%s is filled by no key", base.Type().Field(i).Name)
		}
	}
}

// TestProfilesInclude checks that every profile keeps every floor of the looser ones at least
// as strict, that their order is the key's order, and that each floor names a known key with a
// valid value.
func TestProfilesInclude(t *testing.T) {
	var names []string
	for i, p := range Profiles() {
		names = append(names, p.Name)
		if len(p.Guarantees) == 0 {
			t.Errorf("profile %q documents no guarantee", p.Name)
		}
		for k, v := range p.Floor {
			spec := lookupKey(k)
			if spec == nil || spec.rank(v) < 0 {
				t.Fatalf("profile %q: floor %s = %v is not a known key and value", p.Name, k, v)
			}
		}
		if i == 0 {
			continue
		}
		for k, v := range Profiles()[i-1].Floor {
			spec := lookupKey(k)
			got, ok := p.Floor[k]
			if !ok || spec.rank(got) < spec.rank(v) {
				t.Errorf("profile %q drops or loosens %s = %v of %q", p.Name, k, v, Profiles()[i-1].Name)
			}
		}
	}
	if !reflect.DeepEqual(names, profileOrder()) {
		t.Errorf("profiles %v are not in the order of the profile key %v", names, profileOrder())
	}
}
