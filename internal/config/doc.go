package config

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// YAMLKey returns the config-file key of the option behind a flag name.
func YAMLKey(flag string) string { return strings.ReplaceAll(flag, "-", "_") }

// Markdown renders the option table of docs/configuration.md from the flags bound by
// BindFlags, so the document always matches the code (a test checks it).
func Markdown() string {
	c := Default()
	fs := pflag.NewFlagSet("kura server", pflag.ContinueOnError)
	c.BindFlags(fs)
	var b strings.Builder
	b.WriteString("# Configuration\n\n")
	b.WriteString("<!-- Generated from internal/config by `KURA_REWRITE=1 go test ./internal/config`; do not edit by hand. -->\n\n")
	b.WriteString("Every option can be set in a YAML file (`kura server --config kura.yaml`) or as a flag; a flag given on the command line wins over the file, and the file wins over the default. Durations take Go syntax (`500ms`, `10s`, `240h`). Unknown keys in the file are an error.\n\n")
	b.WriteString("| YAML key | flag | default | effect |\n|---|---|---|---|\n")
	fs.VisitAll(func(f *pflag.Flag) {
		def := f.DefValue
		if def == "" {
			def = `""`
		}
		fmt.Fprintf(&b, "| `%s` | `--%s` | `%s` | %s |\n", YAMLKey(f.Name), f.Name, def, f.Usage)
	})
	return b.String()
}
