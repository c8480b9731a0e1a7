package vm

// This file keeps a warm shell in the connection holder (mux.go). Under software emulation
// most of a short command's time is the guest starting its session: sshd forks, PAM sets the
// environment, the login shell loads. The holder therefore keeps one session open on its box
// connection whose login shell already runs WarmShellScript: it waits for one NUL-terminated
// command on its stdin and evaluates it. The first client session that starts with "exec"
// (no environment variables, no terminal before it) is bound to that shell: the holder writes
// the exec's command into the shell's stdin and relays the channel both ways as it relays any
// other; then it starts the next warm shell. A client session that asks for anything else
// first gets a new session on the box connection, as without a warm shell.
//
// What a warm shell changes, and what it does not:
//   - The command runs in a shell that started before the client asked for it, with the
//     environment sshd and the login shell's startup files gave it then; a change to those
//     files shows from the next session on. The command line, its quoting and its stdin are
//     the same bytes a fresh session would get.
//   - The guard check is unchanged: a gated session (gate.go) still waits for the host's
//     go-ahead after the guard daemon's report, read per session; the warm shell only has
//     started earlier, as the gated session's own shell would have a few milliseconds later.
//   - A warm shell that ended on its own (killed in the box, a shell without read -d) is
//     dropped when it is taken, and the session gets a new one.

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// WarmShellScript is the command line of a warm shell: read one command up to a NUL byte (the
// holder's) and evaluate it; EOF first exits GateClosedExit. bash's read takes one byte at a
// time from a pipe, so the command's own stdin starts right after the NUL.
var WarmShellScript = fmt.Sprintf(`IFS= read -r -d '' corral_cmd || exit %d; eval "$corral_cmd"`, GateClosedExit)

// warmPool keeps warmShells warm shells ready on up, or starting.
type warmPool struct {
	up     *ssh.Client
	mu     sync.Mutex
	queue  []*warmStart // oldest first
	failed bool         // the box refused a warm shell's exec: do not ask again
}

// warmShells is how many warm shells a holder keeps. Two, so that commands run back to back
// (a script, an agent's tool calls) each find one that started a whole command earlier: under
// software emulation a shell takes longer to start than a short command takes to run.
const warmShells = 2

// warmStart is one warm shell on its way: w is set when done is closed (nil if it failed).
type warmStart struct {
	done chan struct{}
	w    *warmShell
}

// warmWait bounds how long a session waits for a warm shell that is still starting before it
// asks the box for a session of its own.
var warmWait = 2 * time.Second

// fill starts warm shells in the background until warmShells are ready or starting.
func (p *warmPool) fill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.queue) < warmShells && !p.failed {
		p.start()
	}
}

// start starts one warm shell; p.mu is held.
func (p *warmPool) start() {
	ws := &warmStart{done: make(chan struct{})}
	p.queue = append(p.queue, ws)
	go func() {
		w, err := startWarmShell(p.up)
		if errors.Is(err, errExecRefused) {
			p.mu.Lock()
			p.failed = true
			p.mu.Unlock()
		}
		ws.w = w
		close(ws.done)
	}()
}

// disable ends every warm shell and starts no more, freeing their sessions on the box
// connection (sshd allows MaxSessions per connection: 10 unless the box's sshd says
// otherwise, and boxes made before git corral raised it keep 10). It reports whether there
// was a warm shell to end.
func (p *warmPool) disable() bool {
	p.mu.Lock()
	q := p.queue
	p.queue, p.failed = nil, true
	p.mu.Unlock()
	for _, ws := range q {
		go func() {
			<-ws.done
			if ws.w != nil {
				ws.w.ch.Close()
			}
		}()
	}
	return len(q) > 0
}

// take binds the warm shell to the client channel dch and returns it, or nil when there is
// none or it has ended; it starts the next one. A shell still starting is waited for (up to
// warmWait): it is further on than a session asked for now would be.
func (p *warmPool) take(dch ssh.Channel) *warmShell {
	p.mu.Lock()
	var ws *warmStart
	if len(p.queue) > 0 {
		ws = p.queue[0]
		p.queue = p.queue[1:]
	}
	p.mu.Unlock()
	if ws == nil {
		p.fill()
		return nil
	}
	select {
	case <-ws.done:
	case <-time.After(warmWait):
		go func() { // too slow: let it go when it comes
			<-ws.done
			if ws.w != nil {
				ws.w.ch.Close()
			}
		}()
		p.fill()
		return nil
	}
	p.fill()
	w := ws.w
	if w == nil {
		return nil
	}
	if !w.bind(dch) {
		w.ch.Close()
		return nil
	}
	return w
}

// warmShell is one session on the box connection running WarmShellScript.
type warmShell struct {
	ch   ssh.Channel
	mu   sync.Mutex
	down ssh.Channel // the client channel it is bound to; nil while waiting
	dead bool        // it ended, or said it would, before being bound
	done chan struct{}
}

func startWarmShell(up *ssh.Client) (*warmShell, error) {
	ch, reqs, err := up.OpenChannel("session", nil)
	if err != nil {
		return nil, err
	}
	ok, err := ch.SendRequest("exec", true, ssh.Marshal(struct{ Command string }{WarmShellScript}))
	if err == nil && !ok {
		err = errExecRefused
	}
	if err != nil {
		ch.Close()
		return nil, err
	}
	w := &warmShell{ch: ch, done: make(chan struct{})}
	go w.monitor(reqs)
	return w, nil
}

var errExecRefused = errors.New("the box refused the warm shell's exec")

// monitor answers the box's requests while the shell waits (a keepalive is answered; an
// exit-status means it ended) and forwards them to the client once bound.
func (w *warmShell) monitor(reqs <-chan *ssh.Request) {
	for r := range reqs {
		w.mu.Lock()
		down := w.down
		if down == nil {
			switch r.Type {
			case "exit-status", "exit-signal":
				w.dead = true
			}
			w.mu.Unlock()
			if r.WantReply {
				r.Reply(false, nil)
			}
			continue
		}
		w.mu.Unlock()
		ok, err := down.SendRequest(r.Type, r.WantReply, r.Payload)
		if r.WantReply {
			r.Reply(ok && err == nil, nil)
		}
	}
	w.mu.Lock()
	bound := w.down != nil
	w.dead = true
	w.mu.Unlock()
	if bound {
		close(w.done)
	}
}

// bind attaches the shell to the client channel unless it has ended.
func (w *warmShell) bind(dch ssh.Channel) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead {
		return false
	}
	w.down = dch
	return true
}

// relaySession relays a client's session channel, on a warm shell when the client asks only
// for environment values a warm shell can take and then an exec, else on a new session as
// relay does.
func (s *muxServer) relaySession(nc ssh.NewChannel) {
	dch, dreqs, err := nc.Accept()
	if err != nil {
		return
	}
	var env []*ssh.Request // "env" requests already answered, in order
	var exports strings.Builder
	var first *ssh.Request
	for first = range dreqs {
		if first.Type != "env" {
			break
		}
		var kv struct{ Name, Value string }
		if ssh.Unmarshal(first.Payload, &kv) != nil || !warmEnvName(kv.Name) || strings.ContainsRune(kv.Value, 0) {
			break
		}
		env = append(env, first)
		// Quoted as every argument is (shellQuote): inside single quotes nothing is special.
		exports.WriteString("export " + kv.Name + "=" + shellQuote(kv.Value) + "; ")
		if first.WantReply {
			first.Reply(true, nil)
		}
		first = nil
	}
	if first == nil {
		dch.Close()
		return
	}
	var m struct{ Command string }
	if first.Type == "exec" && ssh.Unmarshal(first.Payload, &m) == nil && !strings.ContainsRune(m.Command, 0) {
		if w := s.warm.take(dch); w != nil {
			if _, err := w.ch.Write([]byte(exports.String() + m.Command + "\x00")); err == nil {
				if first.WantReply {
					first.Reply(true, nil)
				}
				pipeChannel(w.ch, func(ssh.Channel) <-chan struct{} { return w.done }, dch, dreqs)
				return
			}
			// The shell's stdin is gone: it has ended. The exec fails, as on a box that
			// cannot start a session.
			if first.WantReply {
				first.Reply(false, nil)
			}
			w.ch.Close()
			dch.Close()
			return
		}
	}
	uch, ureqs, err := s.up.ssh.OpenChannel("session", nc.ExtraData())
	var refused *ssh.OpenChannelError
	if errors.As(err, &refused) && s.warm.disable() {
		// The box's sshd has no session left for it: the warm shells give theirs up (the box
		// takes a moment to see them closed), and this holder keeps none from now on.
		for try := 0; err != nil && try < 40; try++ {
			time.Sleep(25 * time.Millisecond)
			uch, ureqs, err = s.up.ssh.OpenChannel("session", nc.ExtraData())
		}
	}
	if err != nil {
		refuseSession(dch, first, dreqs, err)
		return
	}
	// The values answered already go to the new session first; one the box refuses now
	// ends the session rather than run it without the value.
	for _, r := range env {
		if ok, err := uch.SendRequest(r.Type, true, r.Payload); !ok || err != nil {
			if first.WantReply {
				first.Reply(false, nil)
			}
			uch.Close()
			dch.Close()
			return
		}
	}
	ok, err := uch.SendRequest(first.Type, first.WantReply, first.Payload)
	if first.WantReply {
		first.Reply(ok && err == nil, nil)
	}
	pipeChannel(uch, upRequests(ureqs), dch, dreqs)
}

// warmEnvName reports whether a variable can be set in a warm shell with export, to the same
// effect for the command as sshd setting it before the shell starts: a plain name that is not
// one of bash's own (readonly, or read at startup or while parsing, such as BASH_ENV or IFS).
func warmEnvName(name string) bool {
	if !envName.MatchString(name) || strings.HasPrefix(name, "BASH") || strings.HasPrefix(name, "corral_") {
		return false
	}
	switch name {
	case "ENV", "IFS", "PS4", "SHELLOPTS", "UID", "EUID", "PPID", "GROUPS", "HOSTNAME", "HOSTTYPE",
		"OSTYPE", "MACHTYPE", "SHLVL", "PWD", "OLDPWD", "LINENO", "RANDOM", "SECONDS", "POSIXLY_CORRECT",
		"SHELL", "HOME", "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "_":
		return false
	}
	return true
}

// refuseSession ends a client session the box would not open after the holder accepted it:
// the client's requests are answered until it starts its command, which then fails with the
// box's reason on stderr and exit status 255, as a session that could not start.
func refuseSession(dch ssh.Channel, first *ssh.Request, dreqs <-chan *ssh.Request, err error) {
	defer dch.Close()
	for r := first; r != nil; r = <-dreqs {
		if r.WantReply {
			r.Reply(true, nil)
		}
		if r.Type == "exec" || r.Type == "shell" || r.Type == "subsystem" {
			fmt.Fprintf(dch.Stderr(), "corral: the box refused a new session on the connection holder's connection: %v\n", err)
			dch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{ExitSessionFailure}))
			return
		}
	}
}
