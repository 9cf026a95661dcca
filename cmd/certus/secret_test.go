package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
)

func TestSecret(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CERTUS_TEST_SECRET", "from-env")
	for _, tc := range []struct {
		args    []string
		want    string
		wantErr bool
	}{
		{nil, "from-env", false},
		{[]string{"--s", "from-flag"}, "from-flag", false},
		{[]string{"--s-file", file}, "from-file", false},
		{[]string{"--s", "x", "--s-file", file}, "", true},
		{[]string{"--s-file", file + ".missing"}, "", true},
	} {
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		s := addSecret(f, "s", "s-file", "CERTUS_TEST_SECRET", "test secret")
		if err := f.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		got, err := s.get()
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%v: %q, %v; want %q (error: %v)", tc.args, got, err, tc.want, tc.wantErr)
		}
	}
	for in, want := range map[string]string{"a\n": "a", "a\r\n": "a", "a\n\n": "a\n", "a": "a", " a ": " a "} {
		if got := trimNewline(in); got != want {
			t.Errorf("trimNewline(%q) = %q, want %q", in, got, want)
		}
	}
}
