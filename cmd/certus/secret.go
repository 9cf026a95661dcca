package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// secret is a secret option: a value on the command line (which anyone
// on the host sees in ps, so only kept for compatibility), a file, or an
// environment variable, looked at in that order.
type secret struct {
	flag, fileFlag, env string
	value, file         string
}

// addSecret registers --<fileFlag> (and --<flag> when flag is not "") on
// f for a secret that env may also hold; what names it in the usage.
func addSecret(f *pflag.FlagSet, flag, fileFlag, env, what string) *secret {
	s := &secret{flag: flag, fileFlag: fileFlag, env: env}
	if flag != "" {
		f.StringVar(&s.value, flag, "", what+" (visible to every user of the host in ps: prefer --"+fileFlag+" or "+env+")")
	}
	f.StringVar(&s.file, fileFlag, "", "file holding the "+what+" (one trailing newline is ignored); or set "+env)
	return s
}

// get returns the secret ("" when none is given); a value given both on
// the command line and in a file is an error.
func (s *secret) get() (string, error) {
	switch {
	case s.value != "" && s.file != "":
		return "", fmt.Errorf("--%s and --%s both given: use one", s.flag, s.fileFlag)
	case s.value != "":
		return s.value, nil
	case s.file != "":
		b, err := os.ReadFile(s.file)
		if err != nil {
			return "", fmt.Errorf("--%s: %w", s.fileFlag, err)
		}
		return trimNewline(string(b)), nil
	}
	return trimNewline(os.Getenv(s.env)), nil
}

// trimNewline drops one trailing newline ("\n" or "\r\n"), which editors
// and `echo` add to a file.
func trimNewline(v string) string {
	if v, ok := strings.CutSuffix(v, "\n"); ok {
		return strings.TrimSuffix(v, "\r")
	}
	return v
}
