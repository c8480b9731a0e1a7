// Command testsummary reads `go test -json` on stdin and prints what a person (and CI) needs:
// each package's result, the whole output of every failed test, every skipped test with its
// reason, and one line "suite NAME tests=N passed=P failed=F skipped=S time=Ts". With -groups it
// first prints one line per top-level test, in the order they ended: "group SUITE TEST RESULT
// time=Ts" (the end-to-end suite's groups, each a box or two: scripts/e2e-record.sh turns these
// lines into docs/E2E.md's record of the last whole run).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	name := flag.String("name", "go", "suite name for the summary line")
	secs := flag.Int("seconds", 0, "wall time of the suite")
	groups := flag.Bool("groups", false, "print each top-level test's result and time")
	flag.Parse()
	var groupLines []string
	out := map[string][]string{} // package/test -> output lines
	var passed, failed, skipped int
	var failedTests, skippedTests []string
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Println(sc.Text()) // not JSON: build errors and the like, shown as they are
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			out[key] = append(out[key], e.Output)
			if e.Test == "" && (strings.HasPrefix(e.Output, "ok ") || strings.HasPrefix(e.Output, "FAIL") || strings.HasPrefix(e.Output, "?")) {
				fmt.Print(e.Output)
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				continue
			}
			if *groups && !strings.Contains(e.Test, "/") {
				groupLines = append(groupLines, fmt.Sprintf("group %s %s %s time=%.0fs", *name, e.Test, e.Action, e.Elapsed))
			}
			switch e.Action {
			case "pass":
				passed++
			case "fail":
				failed++
				failedTests = append(failedTests, key)
			case "skip":
				skipped++
				skippedTests = append(skippedTests, key)
			}
		}
	}
	for _, l := range groupLines {
		fmt.Println(l)
	}
	sort.Strings(skippedTests)
	for _, k := range skippedTests {
		fmt.Printf("SKIP %s: %s\n", k, strings.TrimSpace(lastLine(out[k])))
	}
	for _, k := range failedTests {
		fmt.Printf("--- FAIL %s\n%s", k, strings.Join(out[k], ""))
	}
	fmt.Printf("suite %s tests=%d passed=%d failed=%d skipped=%d time=%ds\n", *name, passed+failed+skipped, passed, failed, skipped, *secs)
}

// lastLine is the last non-empty line of a test's output that is not the --- SKIP line itself.
func lastLine(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "--- SKIP") && !strings.HasPrefix(l, "=== ") {
			return l
		}
	}
	return "(no reason given)"
}
