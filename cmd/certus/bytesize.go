package main

import (
	"fmt"
	"strconv"
	"strings"
)

// parseBytes parses a size like "128MB", "64M", "1GiB" or "4096"
// (binary multiples: K = 1024).
func parseBytes(s string) (uint64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "IB"), "B")
	mult := uint64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseUint(strings.TrimSpace(t), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q (use e.g. 128MB, 1G or 4096)", s)
	}
	return v * mult, nil
}

// byteSize is a flag.Value for a size in bytes.
type byteSize[T uint64 | int64 | int] struct{ p *T }

func (b byteSize[T]) String() string {
	if b.p == nil || *b.p == 0 {
		return ""
	}
	v := uint64(*b.p)
	for _, u := range []struct {
		suffix string
		size   uint64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v%u.size == 0 {
			return strconv.FormatUint(v/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatUint(v, 10)
}

func (b byteSize[T]) Set(s string) error {
	v, err := parseBytes(s)
	if err == nil {
		*b.p = T(v)
	}
	return err
}

func (b byteSize[T]) Type() string { return "size" }
