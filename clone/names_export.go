package clone

// PathProblem says why a slash-separated repository-relative path is refused by the component
// rules at the top of names.go (absolute, empty, "." or "..", ".git" in any spelling a file
// system aliases to it, control characters), or "" when it is acceptable. A trailing slash is
// allowed. Packages that take repository-relative paths from configuration (hide, box_dirs)
// use it so that every path is held to the same rules as a tree entry.
func PathProblem(p string) string {
	return pathProblem(p)
}
