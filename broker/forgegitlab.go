package broker

// GitLab's API by class (forge.go states the classes). REST paths are those under /api/v4; a
// project or group is one segment, its numeric id or its URL-encoded path ("group%2Fproject"),
// which a GitLab route alone lets through (forgeCleanPath). GraphQL mutations are classed by
// words of their names, since GitLab names them noun first (mergeRequestAccept,
// branchRuleCreate): a mergeRequest mutation that merges, accepts or approves is merge, not
// every mergeRequest mutation. What no rule names is "write".

import "strings"

// gitlabProjectWrites classes a write below /projects/ID by its first segment.
var gitlabProjectWrites = map[string]string{
	"merge_trains": ForgeMerge, "statuses": ForgeMerge,
	"repository": ForgePush, "releases": ForgePush,
	"protected_branches": ForgeProtection, "protected_tags": ForgeProtection, "protected_environments": ForgeProtection,
	"push_rule": ForgeProtection, "approval_rules": ForgeProtection, "approvals": ForgeProtection,
	"approval_settings": ForgeProtection, "external_status_checks": ForgeProtection, "deploy_keys": ForgeProtection,
	"deploy_tokens": ForgeProtection, "hooks": ForgeProtection, "members": ForgeProtection, "invitations": ForgeProtection,
	"share": ForgeProtection, "variables": ForgeProtection, "access_tokens": ForgeProtection, "transfer": ForgeProtection,
	"archive": ForgeProtection, "unarchive": ForgeProtection, "integrations": ForgeProtection, "services": ForgeProtection,
	"remote_mirrors": ForgeProtection, "mirror": ForgeProtection, "runners": ForgeProtection, "restore": ForgeProtection,
	"job_token_scope": ForgeProtection, "security_settings": ForgeProtection, "cluster_agents": ForgeProtection,
	"triggers": ForgeProtection, "custom_attributes": ForgeProtection, "repository_storage_moves": ForgeProtection,
}

// gitlabMergeRequestActions classes a write below /projects/ID/merge_requests/IID by its segment.
var gitlabMergeRequestActions = map[string]string{
	"merge": ForgeMerge, "approve": ForgeMerge, "unapprove": ForgeMerge, "reset_approvals": ForgeMerge,
	"cancel_merge_when_pipeline_succeeds": ForgeMerge, "rebase": ForgePush,
	"approvals": ForgeProtection, "approval_rules": ForgeProtection, "approval_settings": ForgeProtection,
}

// gitlabAdminRoots are top-level paths every write below which is protection.
var gitlabAdminRoots = map[string]bool{
	"groups": true, "admin": true, "application": true, "applications": true, "hooks": true, "runners": true,
	"users": true, "personal_access_tokens": true, "deploy_keys": true, "deploy_tokens": true, "features": true,
	"license": true, "namespaces": true, "broadcast_messages": true, "service_accounts": true, "group_access_tokens": true,
}

// gitlabUserAdmin are the segments after /user whose writes are protection.
var gitlabUserAdmin = map[string]bool{
	"keys": true, "gpg_keys": true, "emails": true, "personal_access_tokens": true, "runners": true,
	"support_pin": true,
}

// gitlabREST classes a REST write by its normalised path segments.
func gitlabREST(s []string) string {
	switch {
	case len(s) == 0:
		return ForgeWrite
	case gitlabAdminRoots[s[0]]:
		return ForgeProtection
	case s[0] == "user":
		if len(s) == 1 || gitlabUserAdmin[s[1]] {
			return ForgeProtection
		}
		return ForgeWrite
	case s[0] != "projects" || len(s) == 1:
		return ForgeWrite // POST /projects creates one
	case len(s) == 2:
		return ForgeProtection // the project itself: settings, default branch, deletion
	}
	r := s[2:]
	switch {
	case r[0] == "merge_requests" && len(r) >= 3:
		if c, ok := gitlabMergeRequestActions[r[2]]; ok {
			return c
		}
		return ForgeWrite
	case r[0] == "repository" && len(r) >= 4 && r[1] == "commits" && (r[3] == "comments" || r[3] == "discussions"):
		return ForgeWrite
	}
	if c, ok := gitlabProjectWrites[r[0]]; ok {
		return c
	}
	return ForgeWrite
}

// gitlabMutationWords class a GraphQL mutation whose lower-cased name contains the word, in
// order; mergeRequest mutations are classed on the rest of their name (gitlabMutation).
var gitlabMutationWords = []struct{ word, class string }{
	{"protect", ForgeProtection}, {"branchrule", ForgeProtection}, {"approvalrule", ForgeProtection},
	{"approvalproject", ForgeProtection}, {"member", ForgeProtection}, {"variable", ForgeProtection},
	{"token", ForgeProtection}, {"deploykey", ForgeProtection}, {"hook", ForgeProtection}, {"policy", ForgeProtection},
	{"runner", ForgeProtection}, {"pushrule", ForgeProtection}, {"setting", ForgeProtection},
	{"permission", ForgeProtection}, {"transfer", ForgeProtection}, {"archive", ForgeProtection},
	{"merge", ForgeMerge}, {"accept", ForgeMerge}, {"approve", ForgeMerge},
	{"commitcreate", ForgePush}, {"createbranch", ForgePush}, {"branchcreate", ForgePush}, {"branchdelete", ForgePush},
	{"tagcreate", ForgePush}, {"tagdelete", ForgePush}, {"release", ForgePush}, {"rebase", ForgePush},
	{"cherrypick", ForgePush}, {"revert", ForgePush},
}

// gitlabMutation classes one GraphQL mutation field by its name.
func gitlabMutation(name string) string {
	l := strings.ToLower(name)
	l = strings.TrimPrefix(l, "mergerequests")
	l = strings.TrimPrefix(l, "mergerequest")
	for _, w := range gitlabMutationWords {
		if strings.Contains(l, w.word) {
			return w.class
		}
	}
	return ForgeWrite
}
