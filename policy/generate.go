package policy

//go:generate go run ./internal/gentable ../SECURITY.md
