package main

// suggest returns the command a mistyped name most likely meant, as git's "did you mean"
// does: the nearest name by edit distance (at most 2, and less than half the name), or a
// command the name is a prefix of when only one is; "" when nothing is near.
func suggest(name string) string {
	best, bestD, prefixed, nPrefix := "", 3, "", 0
	for _, c := range commands() {
		if len(name) >= 2 && len(c.name) > len(name) && c.name[:len(name)] == name {
			prefixed, nPrefix = c.name, nPrefix+1
		}
		if d := editDistance(name, c.name); d < bestD && 2*d < len(c.name) {
			best, bestD = c.name, d
		}
	}
	if best != "" {
		return best
	}
	if nPrefix == 1 {
		return prefixed
	}
	return ""
}

// editDistance is the Damerau-Levenshtein distance (adjacent transpositions count once) of a
// and b, byte-wise: command names are ASCII.
func editDistance(a, b string) int {
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
