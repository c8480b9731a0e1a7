# Written by git corral at every boot: login shells (git corral shell, an editor's terminal)
# get the agent store's launchers on PATH when the store is mounted, as run and start do.
# Root-owned; the box user cannot change it.
if [ -d {{.AgentBin}} ]; then
	case ":$PATH:" in
	*:{{.AgentBin}}:*) ;;
	*) PATH={{.AgentBin}}:$PATH
		export PATH ;;
	esac
fi
