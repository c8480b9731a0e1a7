// Package login keeps subscription logins on the host, for the broker to use on the box's
// behalf: a box never holds the access or refresh token, only a placeholder that the broker
// replaces.
//
// Owns: the login store ($CORRAL_HOME/logins/NAME.json, 0600 in a 0700 directory, written
// atomically), the record format, and the refresh of an OAuth login under an exclusive lock
// (source.go), so that many brokers (one per box) share one login whose refresh token rotates
// on use without ever presenting a spent one.
//
// Does not own: how a login reaches the store from the user (cmd/git-corral `agents login`),
// which route uses it and what the box sees (session, broker), or the interactive OAuth
// sign-in itself (the agent's own login on the host, or its long-lived token command).
//
// Rules:
//   - a token is never on a command line, in an error message or in a log: errors name the
//     login and the file, never a value;
//   - the store is read again at every use (a refresh another process made is used at once);
//   - a refresh happens only under the login's flock, after reading the record again under
//     the lock: if another process refreshed meanwhile, its token is used and the refresh
//     token is not spent twice;
//   - the rotated refresh token is saved (atomically) before the new access token is handed
//     out, so a crash never leaves the store holding a spent refresh token;
//   - a token endpoint is https, or http only to a loopback address (stand-ins in tests).
package login
