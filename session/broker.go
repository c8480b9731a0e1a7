package session

import (
	"context"
	"fmt"
	"os"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// brokerPort is the box's broker port, the one rule for every source: the port recorded at
// creation (the guest's firewall allows exactly it), or a free one for a new box; 0 outside
// broker mode.
func brokerPort(cfg *policy.Config, meta vm.Meta) (int, error) {
	if cfg.Network != policy.NetworkBroker {
		return 0, nil
	}
	if meta.BrokerPort != 0 {
		return meta.BrokerPort, nil
	}
	return broker.FreePort()
}

// brokerExe is the git-corral binary the broker child runs (tests point it at a build).
var brokerExe = os.Executable

// ensureBroker makes the box's broker child run on its fixed port, restarting it when it died,
// and records its PID; a child started with another allow-list (egress) or other API routes
// (apiroutes.go) is restarted with the current ones: it reads both only when it starts, and a
// narrowed allow-list must hold from the next session on. It returns the secret the guest's
// proxy settings carry.
func ensureBroker(ctx context.Context, m *vm.Manager, box string, cfg *policy.Config, port int, notice func(string)) ([]byte, error) {
	h := m.Home
	if err := h.MkdirAll(h.Boxes()); err != nil {
		return nil, err
	}
	secretFile, secret, err := broker.EnsureSecretFile(h.BrokerSecret(box))
	if err != nil {
		return nil, err
	}
	meta, err := m.ReadMeta(box)
	if err != nil {
		return nil, err
	}
	plan, err := planRoutes(cfg, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	lg, err := planLogin(cfg, h.Dir) // agentlogin.go: the agent's host-held login, if any
	if err != nil {
		return nil, err
	}
	if lg != nil {
		plan.routes = append(plan.routes, lg.brokerRoute(cfg))
	}
	digest := broker.RoutesDigest(secret, plan.routes)
	if broker.ChildRunning(meta.BrokerPID, box) {
		sameRoutes := broker.ChildRoutesDigest(meta.BrokerPID) == digest
		sameAllow := broker.ChildAllow(meta.BrokerPID) == broker.JoinAllow(cfg.Egress)
		if sameRoutes && sameAllow {
			return secret, nil
		}
		// The allow-list, the routes or their credentials changed since the child started: it
		// reads them only then, so it is restarted on the same port.
		what := "api routes"
		if !sameAllow {
			what = "egress allow-list"
		}
		notice(fmt.Sprintf("%s of box %s changed: restarting its broker", what, box))
		broker.StopChild(meta.BrokerPID, box)
	}
	exe, err := brokerExe()
	if err != nil {
		return nil, fmt.Errorf("find git-corral to start the broker: %w", err)
	}
	if err := h.MkdirAll(h.Logs()); err != nil {
		return nil, err
	}
	pid, err := broker.StartChild(ctx, broker.ChildOptions{
		Exe: exe, Box: box, Port: port, Allow: cfg.Egress, SecretFile: secretFile,
		EgressLog: h.EgressLog(box), DiagLog: h.BrokerLog(box), APIRoutes: plan.routes, RoutesDigest: digest,
		Env: plan.childEnv(),
	})
	if err != nil {
		return nil, hint.With(err, "the broker decides every connection of a box in broker mode; without it the session does not start")
	}
	meta.BrokerPID = pid
	if err := m.WriteMeta(meta); err != nil {
		broker.StopChild(pid, box)
		return nil, err
	}
	notice(fmt.Sprintf("broker for box %s listens on 127.0.0.1:%d (pid %d)", box, port, pid))
	return secret, nil
}

// proxyEnv is what a broker-mode session is given so that its tools use the broker.
func (b *Box) proxyEnv() map[string]string {
	return broker.ProxyEnv(b.BrokerSecret, provision.Gateway, b.BrokerPort)
}
