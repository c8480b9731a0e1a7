package report

import (
	"encoding/json"
	"time"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/diff"
	"github.com/git-corral/git-corral/policy"
)

// Format names the document format; Check refuses any other.
const Format = "git-corral-report/1"

// Kinds of record.
const (
	KindSession = "session"
	KindBox     = "box"
)

// Record is one report document. Every member of Sections is hashed on its own (Hashes), and
// Digest binds the hashes in SectionNames order.
type Record struct {
	Format   string            `json:"format"`
	Sections Sections          `json:"sections"`
	Hashes   map[string]string `json:"hashes"`
	Digest   string            `json:"digest"`
}

// SectionNames are the members of Sections in document order; Check requires exactly these.
var SectionNames = []string{"record", "box", "policy", "sessions", "egress", "pushes", "diff", "snapshots", "commits"}

// Sections are the parts of a record.
type Sections struct {
	Record    Header    `json:"record"`
	Box       BoxInfo   `json:"box"`
	Policy    Policy    `json:"policy"`
	Sessions  []Session `json:"sessions"`
	Egress    Egress    `json:"egress"`
	Pushes    Pushes    `json:"pushes"`
	Diff      Diff      `json:"diff"`
	Snapshots Snapshots `json:"snapshots"`
	Commits   Commits   `json:"commits"`
}

// Header says what the record covers.
type Header struct {
	// Kind is KindSession (one session) or KindBox (every session of the box).
	Kind string `json:"kind"`
	Box  string `json:"box"`
	// Session is the session's ID for KindSession.
	Session   string    `json:"session,omitempty"`
	Generated time.Time `json:"generated"`
	Generator string    `json:"generator"`
	// Window is the time the egress decisions, snapshots and mount-mode commits are taken from.
	Window Window `json:"window"`
	// Sources are the host files the record was read from.
	Sources []string `json:"sources"`
	// Notes say what the record cannot prove.
	Notes []string `json:"notes"`
}

// Window is a span of time; Open is true when its end is the time of the report (the session
// has no end record yet).
type Window struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Open  bool      `json:"open"`
}

// BoxInfo is the box's host-side metadata ($CORRAL_HOME/boxes/<box>.json) and golden base.
type BoxInfo struct {
	Name string `json:"name"`
	// Mode is "mount" (the project directory is mounted) or "clone" (nothing of the host is).
	Mode         string      `json:"mode,omitempty"`
	Project      string      `json:"project,omitempty"`
	Created      *time.Time  `json:"created,omitempty"`
	Image        string      `json:"image,omitempty"`
	TemplateHash string      `json:"templateHash,omitempty"`
	MountType    string      `json:"mountType,omitempty"`
	Network      string      `json:"network,omitempty"`
	TCG          bool        `json:"tcg"`
	Golden       *GoldenInfo `json:"golden,omitempty"`
	// MetaSHA256 is the sha256 of the metadata file as read.
	MetaSHA256  string `json:"metaSha256,omitempty"`
	Unavailable string `json:"unavailable,omitempty"`
}

// GoldenInfo identifies the golden base the box's disk is an overlay of.
type GoldenInfo struct {
	Key         string     `json:"key"`
	Image       string     `json:"image,omitempty"`
	SHA256      string     `json:"sha256,omitempty"`
	StateSHA256 string     `json:"stateSha256,omitempty"`
	Built       *time.Time `json:"built,omitempty"`
	LimaVersion string     `json:"limaVersion,omitempty"`
	Unavailable string     `json:"unavailable,omitempty"`
}

// Policy is the effective configuration with the origin of every value, as git corral config
// --json shows it (env values replaced by their sha256), and its digest: the one the session
// (for a box report, its last session) stored at its start, or, for a session from before
// sessions stored it, the configuration loaded when the report is made (At says which).
type Policy struct {
	// Digest is the sha256 of Settings encoded as compact JSON.
	Digest   string           `json:"digest,omitempty"`
	Settings []policy.Setting `json:"settings"`
	// At is "session start" (the stored snapshot of Session's start) or "report" (loaded now).
	At string `json:"at"`
	// Session is the session whose start the settings are from, with At "session start".
	Session string `json:"session,omitempty"`
	// Files are the configuration files of the layers as they are when the report is made,
	// each with its sha256 when present.
	Files []PolicyFile `json:"files"`
	// RepositoryFileChanged is true when the diff check found .corral.toml changed since the
	// session base (the box could write it); nil when that is unknown.
	RepositoryFileChanged *bool  `json:"repositoryFileChanged,omitempty"`
	Unavailable           string `json:"unavailable,omitempty"`
}

// PolicyFile is one configuration file a load reads.
type PolicyFile struct {
	Layer  string `json:"layer"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256,omitempty"`
	// Missing is true when the file does not exist (the layer is empty).
	Missing bool `json:"missing,omitempty"`
}

// Session is one session command (start, run, shell…) from the audit log.
type Session struct {
	ID      string    `json:"id"`
	Command string    `json:"command,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	// Ended is how it ended: "exit", "guard-failure", or "" when no end record exists (the
	// session still runs, or its process was killed).
	Ended    string   `json:"ended"`
	PID      int      `json:"pid"`
	Network  string   `json:"network,omitempty"`
	Profile  string   `json:"profile,omitempty"`
	EnvNames []string `json:"envNames"`
	SSHAgent bool     `json:"sshAgent"`
	// PolicyDigest is the digest of the policy the session started under (its start record),
	// "" for a session from before sessions recorded it.
	PolicyDigest string `json:"policyDigest,omitempty"`
	// Commands are the guest commands launched, names only.
	Commands []Command `json:"commands"`
	// Events are the session's other records (guard failures, git metadata restored) and the
	// box's records from other processes in its window (a watcher's stop).
	Events []Event `json:"events"`
	// Overlaps names other sessions of the box whose windows overlap this one: the box's egress
	// decisions in the overlap may be theirs.
	Overlaps []string `json:"overlaps,omitempty"`
}

// Command is one guest command: its name, never its arguments.
type Command struct {
	Time time.Time `json:"time"`
	// Name is the base name of argv[0].
	Name string `json:"name"`
	// Args is the number of arguments after the name; ArgvSHA256 the sha256 of the argv
	// joined by NUL bytes, which matches the audit log's record without repeating it.
	Args       int      `json:"args"`
	ArgvSHA256 string   `json:"argvSha256"`
	EnvNames   []string `json:"envNames"`
	SSHAgent   bool     `json:"sshAgent"`
	ExitCode   *int     `json:"exitCode,omitempty"`
	DurationMs int64    `json:"durationMs,omitempty"`
}

// Event is an audit record that is not a command.
type Event struct {
	Time   time.Time `json:"time"`
	Event  string    `json:"event"`
	PID    int       `json:"pid"`
	Detail string    `json:"detail,omitempty"`
}

// Egress is the broker's decisions in the window.
type Egress struct {
	Log      string `json:"log"`
	BadLines int    `json:"badLines"`
	// Counts is the number of decisions per verdict ("allow", "deny").
	Counts       map[string]int `json:"counts"`
	Destinations []Destination  `json:"destinations"`
	// Refusals are every refused attempt, in full.
	Refusals    []EgressEntry `json:"refusals"`
	Unavailable string        `json:"unavailable,omitempty"`
}

// Destination counts the decisions of one host, port and verdict.
type Destination struct {
	Host     string `json:"host"`
	Port     int    `json:"port,omitempty"`
	Decision string `json:"decision"`
	Count    int    `json:"count"`
}

// EgressEntry is one egress log line: the fields this version knows, and Extra holding every
// other member as it was written (a newer broker's fields, such as a git push's ref).
type EgressEntry struct {
	broker.Entry
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
	// push is true when the line had a "ref" or "refs" member, known to broker.Entry or not.
	push bool
}

// Pushes are the egress log's git-push decisions: every entry that carries a "ref" or "refs"
// member, whatever else it carries, allowed or refused.
type Pushes struct {
	Counts  map[string]int `json:"counts"`
	Entries []EgressEntry  `json:"entries"`
}

// Diff is the host-side diff check at the time of the report, as git corral diff --json.
type Diff struct {
	// Verdict is "clean", "findings" or "unavailable".
	Verdict  string         `json:"verdict"`
	Base     *diff.BaseInfo `json:"base,omitempty"`
	Findings []diff.Finding `json:"findings,omitempty"`
	// Changes lists every changed path (no content).
	Changes []Change `json:"changes,omitempty"`
	// Refs are the reviews of the refs fetched back from a clone-mode box.
	Refs        []RefDiff `json:"refs,omitempty"`
	Unavailable string    `json:"unavailable,omitempty"`
}

// Change is one changed path.
type Change struct {
	Path    string `json:"path"`
	Status  string `json:"status"`
	Finding bool   `json:"finding"`
}

// RefDiff is the review of one fetched ref (git corral diff REF in a clone directory).
type RefDiff struct {
	Ref      string              `json:"ref"`
	Base     string              `json:"base,omitempty"`
	Commit   string              `json:"commit,omitempty"`
	Files    []diff.StoreFile    `json:"files,omitempty"`
	Findings []diff.StoreFinding `json:"findings,omitempty"`
	Error    string              `json:"error,omitempty"`
}

// Snapshots are the box's snapshots created in the window.
type Snapshots struct {
	Taken       []Snapshot `json:"taken"`
	Unavailable string     `json:"unavailable,omitempty"`
}

// Snapshot is one snapshot of the box's disk.
type Snapshot struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	Auto    bool      `json:"auto"`
}

// Commits are the commits made in the box and the refs fetched back from it.
type Commits struct {
	GitDir string `json:"gitDir,omitempty"`
	// FetchedRefs are refs/corral/<box>/… as git corral fetch left them.
	FetchedRefs []Ref `json:"fetchedRefs"`
	// Made are the commits: in clone mode those the fetched refs hold beyond the store's own
	// refs; in mount mode those on the checkout's branches committed in the window.
	Made []Commit `json:"made"`
	// Truncated is true when a walk stopped at its cap.
	Truncated   bool   `json:"truncated,omitempty"`
	Unavailable string `json:"unavailable,omitempty"`
}

// Ref is a ref and the commit it names.
type Ref struct {
	Name string `json:"name"`
	Hash string `json:"hash"`
}

// Commit is one commit: hashes bind its content; dates and summary are what its author wrote.
type Commit struct {
	Hash       string    `json:"hash"`
	Parents    []string  `json:"parents"`
	Refs       []string  `json:"refs"`
	AuthorTime time.Time `json:"authorTime"`
	CommitTime time.Time `json:"commitTime"`
	Summary    string    `json:"summary"`
}
