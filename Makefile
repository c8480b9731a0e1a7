# git corral — one entry point for building, installing and testing.
#
#   make build     bin/git-corral (the front on PATH), bin/git-corral-full, bin/git-corral-sandbox
#   make install   binary, man page and completions under $(PREFIX) (default /usr/local)
#   make test      the README's test command: every Go test (the root-only namespace tests run
#                  when invoked as root), then the end-to-end suite when it can run here
#   make e2e       the end-to-end suite alone: real boxes, as the unprivileged user corral-ci
#   make lint      gofmt, go vet, staticcheck (pinned in go.mod as a tool)
#   make man       render docs/man/git-corral.1 from its Markdown source
#   make lima      build the pinned limactl + guest agent into $(LIMA_PREFIX)
#   make fuzz      every fuzz target for $(FUZZTIME) each (default 20s), one worker
#   make bench     every benchmark docs/BENCHMARKS.md quotes, beside its baseline, into
#                  bench/results/ and that doc's generated section (BENCH=a,b for a subset;
#                  BENCHFLAGS=--no-box to boot no box; see scripts/bench.sh --help)

PREFIX      ?= /usr/local
LIMA_PREFIX ?= /usr/local/lib/git-corral/lima
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT      ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
LDFLAGS     := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BINDIR      ?= bin
BIN         := $(BINDIR)/git-corral
GO          ?= go
# sudo resets PATH (secure_path) and Go lives in /usr/local/go on machines of this kind.
export PATH := $(PATH):/usr/local/go/bin
GOTESTFLAGS ?=
FUZZTIME    ?= 20s

.PHONY: build install test unit e2e lint man lima clean fuzz

# What PATH runs as git-corral is the front (cmd/git-corral-front): a small static binary that
# runs 'git corral sandbox -- CMD' itself and execs the full binary, git-corral-full, for every
# other command line. The full binary and the light tier's inside helper stay off PATH, in
# PREFIX/lib/git-corral (on PATH, git would offer "git corral-full" and "git corral-sandbox").
# The inside helper starts once or twice for every sandboxed command: static, and linking only
# package sandbox/inside (cmd/git-corral-sandbox TestHelperDependencies).
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BINDIR)/git-corral-full ./cmd/git-corral
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/git-corral-front
	CGO_ENABLED=0 $(GO) build -o $(BINDIR)/git-corral-sandbox ./cmd/git-corral-sandbox

# fish's files go where fish reads them (scripts/fish-dir.sh: with the default PREFIX on Debian,
# /etc/fish, since Debian's fish does not read /usr/local/share/fish).
FISH_COMPLETIONSDIR ?= $(shell sh scripts/fish-dir.sh completions "$(PREFIX)")
FISH_CONFDIR ?= $(shell sh scripts/fish-dir.sh conf "$(PREFIX)")

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/git-corral $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(FISH_COMPLETIONSDIR) $(DESTDIR)$(FISH_CONFDIR)
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/git-corral
	install -m 755 $(BINDIR)/git-corral-full $(DESTDIR)$(PREFIX)/lib/git-corral/git-corral-full
	install -m 755 $(BINDIR)/git-corral-sandbox $(DESTDIR)$(PREFIX)/lib/git-corral/git-corral-sandbox
	rm -f $(DESTDIR)$(PREFIX)/bin/git-corral-sandbox $(DESTDIR)$(PREFIX)/bin/git-corral-full
	install -m 644 docs/man/git-corral.1 $(DESTDIR)$(PREFIX)/share/man/man1/git-corral.1
	$(BIN) completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/git-corral
	$(BIN) completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_git-corral
	$(BIN) completion fish > $(DESTDIR)$(FISH_COMPLETIONSDIR)/git-corral.fish
	# fish 3.6's git.fish never asks a git-* command's completions; this one line does (see --help).
	$(BIN) completion fish --git-hook > $(DESTDIR)$(FISH_CONFDIR)/git-corral.fish

# test runs the unit and integration tests, then the end-to-end suite, and ends with one summary
# line per suite (its test count and wall time) and the plain closing line CI reads.
test:
	@bash scripts/test-suites.sh

unit:
	$(GO) test $(GOTESTFLAGS) ./...

# e2e boots real boxes as an unprivileged user, CORRAL_E2E_JOBS scenario groups at a time (2).
CORRAL_E2E_JOBS ?= 2
e2e:
	CORRAL_E2E=1 CORRAL_E2E_JOBS=$(CORRAL_E2E_JOBS) $(GO) test -count=1 -timeout 60m -parallel $(CORRAL_E2E_JOBS) -v ./e2e/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

man:
	$(GO) tool go-md2man -in docs/man/git-corral.1.md -out docs/man/git-corral.1

# fuzz runs each target found in the *_test.go files in turn; see docs/FUZZING.md.
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) bash scripts/fuzz.sh

lima:
	PREFIX=$(LIMA_PREFIX) bash scripts/build-lima.sh

# bench writes bench/results/bench-<UTC time>.log and rewrites docs/BENCHMARKS.md's generated
# section from it (internal/benchreport); commit both.
.PHONY: bench
bench:
	@bash scripts/bench.sh $(BENCHFLAGS)

clean:
	rm -rf bin

# policy: regenerate SECURITY.md's trust table from the policy package's key table.
.PHONY: security-table
security-table:
	$(GO) run ./policy/internal/gentable SECURITY.md
