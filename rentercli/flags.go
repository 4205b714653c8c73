package rentercli

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// multiFlag is a flag that may be given several times (--gpu, --label).
type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }

// Set appends one value.
func (m *multiFlag) Set(v string) error {
	*m = append(*m, v)
	return nil
}

// newFlags is a flag set for a command that writes its errors and help
// to w, with usage (the command's synopsis) above the flags.
func newFlags(name, usage string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "%s\n\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, letting positional arguments stand among the
// flags (`suanli rent 12 --gpus 1` as well as `suanli rent --gpus 1 12`),
// and returns the positional arguments and what follows a "--" (a
// remote command for ssh). A wrong flag is a usage error (the flag
// package has printed why); -h is flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) (pos, rest []string, err error) {
	for i, a := range args {
		if a == "--" {
			args, rest = args[:i], args[i+1:]
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, nil, err
		}
		if fs.NArg() == 0 {
			return pos, rest, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// keyValues parses repeated k=v flags (--label, --env) into a map, naming
// the flag in the error.
func keyValues(flagName string, vals []string) (map[string]string, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(vals))
	for _, v := range vals {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want KEY=VALUE", flagName, v)
		}
		m[k] = val
	}
	return m, nil
}
