package boxenv

import _ "embed"

// CredentialHelper is the guest's git credential helper script, installed at
// CredentialHelperPath and named by the guest's system git config.
//
//go:embed git-credential-corral
var CredentialHelper string

// CredentialHelperPath is where the guest gets CredentialHelper.
const CredentialHelperPath = "/usr/local/libexec/corral/git-credential-corral"
