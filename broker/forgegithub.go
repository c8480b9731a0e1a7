package broker

// GitHub's API by class (forge.go states the classes). REST writes are classified by their
// normalised path; GraphQL mutations by their field name, exact names first, then words a name
// contains, so that a mutation GitHub adds later with "Protection", "Ruleset" or "Merge" in its
// name is classed without a change here. What no rule names is "write".

import "strings"

// githubRepoWrites classes a write below /repos/OWNER/REPO by its first segment.
var githubRepoWrites = map[string]string{
	"merges": ForgeMerge, "merge-upstream": ForgeMerge, "statuses": ForgeMerge, "check-runs": ForgeMerge,
	"check-suites": ForgeMerge,
	"git":          ForgePush, "contents": ForgePush, "releases": ForgePush,
	"rulesets": ForgeProtection, "tags": ForgeProtection, "keys": ForgeProtection, "hooks": ForgeProtection,
	"collaborators": ForgeProtection, "invitations": ForgeProtection, "environments": ForgeProtection,
	"transfer": ForgeProtection, "teams": ForgeProtection, "vulnerability-alerts": ForgeProtection,
	"automated-security-fixes": ForgeProtection, "private-vulnerability-reporting": ForgeProtection,
	"properties": ForgeProtection, "code-security": ForgeProtection, "interaction-limits": ForgeProtection,
	"dependabot": ForgeProtection, "codespaces": ForgeProtection,
}

// githubActionsAdmin are the segments after /repos/OWNER/REPO/actions that configure rather
// than run: writes there are protection.
var githubActionsAdmin = map[string]bool{
	"permissions": true, "secrets": true, "variables": true, "runners": true, "runner-groups": true, "oidc": true,
}

// githubAdminRoots are top-level paths every write below which is protection.
var githubAdminRoots = map[string]bool{
	"orgs": true, "enterprises": true, "teams": true, "admin": true, "app": true, "applications": true,
	"authorizations": true, "installation": true, "setup": true,
}

// githubUserAdmin are the segments after /user whose writes are protection (the account's
// credentials, e-mails, memberships, installations and invitations).
var githubUserAdmin = map[string]bool{
	"keys": true, "gpg_keys": true, "ssh_signing_keys": true, "emails": true, "installations": true,
	"memberships": true, "repository_invitations": true, "codespaces": true, "interaction-limits": true,
	"social_accounts": true, "blocks": true,
}

// githubREST classes a REST write by its normalised path segments.
func githubREST(s []string) string {
	switch {
	case len(s) == 0:
		return ForgeWrite
	case githubAdminRoots[s[0]]:
		return ForgeProtection
	case s[0] == "user":
		if len(s) == 1 || githubUserAdmin[s[1]] {
			return ForgeProtection
		}
		return ForgeWrite
	case s[0] != "repos":
		return ForgeWrite
	case len(s) <= 3:
		return ForgeProtection // the repository itself: settings, default branch, deletion
	}
	r := s[3:]
	switch r[0] {
	case "pulls":
		if len(r) >= 3 {
			switch r[2] {
			case "merge", "update-branch", "reviews":
				if len(r) >= 5 && r[4] == "dismissals" {
					return ForgeProtection
				}
				return ForgeMerge
			}
		}
		return ForgeWrite
	case "branches":
		for _, seg := range r[1:] {
			if seg == "protection" {
				return ForgeProtection
			}
		}
		return ForgePush // rename
	case "actions":
		if len(r) >= 2 && githubActionsAdmin[r[1]] {
			return ForgeProtection
		}
		return ForgeWrite
	}
	if c, ok := githubRepoWrites[r[0]]; ok {
		return c
	}
	return ForgeWrite
}

// githubMutations classes GraphQL mutations by exact name.
var githubMutations = map[string]string{
	"mergePullRequest": ForgeMerge, "mergeBranch": ForgeMerge, "enablePullRequestAutoMerge": ForgeMerge,
	"enqueuePullRequest": ForgeMerge, "updatePullRequestBranch": ForgeMerge, "addPullRequestReview": ForgeMerge,
	"submitPullRequestReview": ForgeMerge, "createCheckRun": ForgeMerge, "updateCheckRun": ForgeMerge,
	"createCheckSuite": ForgeMerge, "rerequestCheckSuite": ForgeMerge,

	"createRef": ForgePush, "updateRef": ForgePush, "updateRefs": ForgePush, "deleteRef": ForgePush,
	"createCommitOnBranch": ForgePush, "createLinkedBranch": ForgePush, "revertPullRequest": ForgePush,

	"updateRepository": ForgeProtection, "archiveRepository": ForgeProtection, "unarchiveRepository": ForgeProtection,
	"deleteRepository": ForgeProtection, "transferRepository": ForgeProtection, "updateTeamsRepository": ForgeProtection,
	"dismissPullRequestReview": ForgeProtection, "approveDeployments": ForgeProtection, "rejectDeployments": ForgeProtection,
	"updateRepositoryWebCommitSignoffSetting": ForgeProtection, "addCollaborator": ForgeProtection,
	"inviteEnterpriseAdmin": ForgeProtection, "createDeployment": ForgeProtection, "deleteDeployment": ForgeProtection,
	"createDeploymentStatus": ForgeProtection,
}

// githubMutationWords class a mutation whose lower-cased name contains the word, in order.
var githubMutationWords = []struct{ word, class string }{
	{"protection", ForgeProtection}, {"ruleset", ForgeProtection}, {"enterprise", ForgeProtection},
	{"organization", ForgeProtection}, {"ipallowlist", ForgeProtection}, {"deploykey", ForgeProtection},
	{"collaborator", ForgeProtection}, {"environment", ForgeProtection}, {"secret", ForgeProtection},
	{"permission", ForgeProtection}, {"webhook", ForgeProtection}, {"visibility", ForgeProtection},
	{"bypass", ForgeProtection}, {"membership", ForgeProtection}, {"sshkey", ForgeProtection}, {"gpgkey", ForgeProtection},
	{"merge", ForgeMerge}, {"enqueue", ForgeMerge}, {"approve", ForgeMerge},
	{"commitonbranch", ForgePush},
}

// githubMutation classes one GraphQL mutation field by its name.
func githubMutation(name string) string {
	if c, ok := githubMutations[name]; ok {
		return c
	}
	l := strings.ToLower(name)
	for _, w := range githubMutationWords {
		if strings.Contains(l, w.word) {
			return w.class
		}
	}
	return ForgeWrite
}
